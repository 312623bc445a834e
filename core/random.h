// Random bytes from the kernel (getrandom(2)), for names that must not collide between hosts and
// processes: snapshot ids, lock keys, gc epochs, retry jitter seeds. Not std::random_device:
// libstdc++ may implement it with arc4random, which needs glibc 2.36 and would raise the glibc
// the release tarball asks of a host.
//
// Thread-safety: every function may be called from any thread.
#ifndef CUTOVER_CORE_RANDOM_H_
#define CUTOVER_CORE_RANDOM_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace cutover {

// Fills `out` with `n` random bytes. Without getrandom (a kernel before 3.17) the bytes come
// from the clock and the pid, which still tell concurrent processes apart.
void RandomBytes(void* out, size_t n);

// `bytes` random bytes as lowercase hex (2 x bytes digits).
std::string RandomHex(size_t bytes);

// A random 64-bit seed.
uint64_t RandomSeed();

}  // namespace cutover

#endif  // CUTOVER_CORE_RANDOM_H_
