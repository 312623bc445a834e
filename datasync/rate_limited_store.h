// A Store wrapper that holds the object bytes it moves to a RateLimiter (core/rate_limiter.h), so
// that `--bwlimit` caps a store that has no HTTP client to do it: a file:// store (on a shared
// NFS mount, a USB disk, a link the user means to leave room on). A Put waits for its bytes
// before writing them; a Get or GetRange waits for what it read before returning it, so over any
// period the bytes moved stay within the limiter's rate plus one object. Head, List and Delete
// move no object bytes and pass straight through.
//
// Thread-safety: as the wrapped store (the limiter is thread-safe).
#ifndef CUTOVER_DATASYNC_RATE_LIMITED_STORE_H_
#define CUTOVER_DATASYNC_RATE_LIMITED_STORE_H_

#include <memory>

#include "core/rate_limiter.h"
#include "datasync/store.h"

namespace cutover {

// REQUIRES: inner and limiter non-null.
std::unique_ptr<Store> RateLimitStore(std::unique_ptr<Store> inner,
                                      std::shared_ptr<RateLimiter> limiter);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_RATE_LIMITED_STORE_H_
