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

// --s3-endpoint, --s3-region, --s3-virtual-host, --cacert, --insecure.
void AddStoreFlags(CLI::App* app, StoreFlags* f);
// --bwlimit, for the commands that move chunks.
void AddBwlimitFlag(CLI::App* app, StoreFlags* f);
// --encrypt, for every command that reads or writes snapshots or chunks.
void AddEncryptFlag(CLI::App* app, StoreFlags* f);

// Opens the store at `url` with the flags (`jobs` transfers at once). InvalidArgument for a bad
// flag; with --encrypt taken, a key that does not match the store's config is refused before
// anything is read or written.
Result<std::unique_ptr<Store>> OpenStoreWith(const std::string& url, const StoreFlags& f, int jobs);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_STORE_FLAGS_H_
