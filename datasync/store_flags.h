// The store flags every `cutover datasync` command shares (S3 endpoint and region, TLS, --bwlimit,
// --encrypt), and opening a store with them. Part of the command layer: the library takes a Store.
#ifndef CUTOVER_DATASYNC_STORE_FLAGS_H_
#define CUTOVER_DATASYNC_STORE_FLAGS_H_

#include <memory>
#include <string>

#include "core/cli.h"
#include "core/status.h"
#include "datasync/store.h"

namespace cutover {

// Flags every command that opens a store takes.
struct StoreFlags {
  std::string s3_endpoint;  // or $AWS_ENDPOINT_URL_S3 / $AWS_ENDPOINT_URL
  std::string s3_region;    // or $AWS_REGION / $AWS_DEFAULT_REGION
  bool s3_virtual_host = false;
  std::string cacert;
  bool insecure = false;
  std::string bwlimit;  // push, pull and verify only: total bytes/s over every transfer
  std::string encrypt;  // the key file of an encrypted store
  // The command reads snapshots or chunks (has --encrypt): the store's config is checked against
  // --encrypt when the store is opened.
  bool takes_encrypt = false;
};

// Which flags beyond the common ones a command takes (AddStoreArgs).
enum StoreFlagSet : unsigned {
  kStoreFlagsOnly = 0,
  kStoreEncrypt = 1,  // --encrypt: the command reads or writes snapshots or chunks
  kStoreBwlimit = 2,  // --bwlimit: the command moves chunks
};

// The STORE positional (required, at this point of the positionals) into *url, the common store
// flags (--s3-endpoint, --s3-region, --s3-virtual-host, --cacert, --insecure) and those of
// `extras` (StoreFlagSet bits) into *f.
void AddStoreArgs(CLI::App* app, std::string* url, StoreFlags* f, unsigned extras);

// Opens the store at `url` with the flags (`jobs` transfers at once). InvalidArgument for a bad
// flag; with --encrypt taken, a key that does not match the store's config is refused before
// anything is read or written.
Result<std::unique_ptr<Store>> OpenStoreWith(const std::string& url, const StoreFlags& f, int jobs);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_STORE_FLAGS_H_
