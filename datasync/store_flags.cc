#include "datasync/store_flags.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>

#include "core/units.h"
#include "datasync/encrypted_store.h"
#include "datasync/rate_limited_store.h"
#include "datasync/store_config.h"

namespace cutover {

namespace {

void AddCommonFlags(CLI::App* app, StoreFlags* f) {
  app->add_option("--s3-endpoint", f->s3_endpoint,
                  "S3-compatible endpoint URL, e.g. http://127.0.0.1:9000 (default "
                  "$AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else AWS)");
  app->add_option("--s3-region", f->s3_region,
                  "S3 signing region (default $AWS_REGION, $AWS_DEFAULT_REGION, else us-east-1)");
  app->add_flag("--s3-virtual-host", f->s3_virtual_host,
                "With --s3-endpoint: bucket.endpoint/key URLs instead of endpoint/bucket/key");
  app->add_option("--cacert", f->cacert,
                  "PEM CA bundle that verifies the store's TLS certificate (default "
                  "$SSL_CERT_FILE, else the system's)");
  app->add_flag("--insecure", f->insecure,
                "Do not verify the store's TLS certificate (a warning is printed)");
}

void AddBwlimitFlag(CLI::App* app, StoreFlags* f) {
  app->add_option("--bwlimit", f->bwlimit,
                  "Cap the total store traffic of this command over all its transfers, e.g. 100M "
                  "(bytes/s) or 1Gbit (bits/s); every kind of store");
}

void AddEncryptFlag(CLI::App* app, StoreFlags* f) {
  f->takes_encrypt = true;
  app->add_option("--encrypt", f->encrypt,
                  "Client-side encryption with the key in KEYFILE (32 random bytes or 64 hex "
                  "digits, chmod 600; make one with head -c 32 /dev/urandom): objects are "
                  "AES-256-GCM, chunk names keyed HMAC-SHA-256. Only a new store can be "
                  "encrypted; every later command on it needs the same key")
      ->option_text("KEYFILE");
}

}  // namespace

void AddStoreArgs(CLI::App* app, std::string* url, StoreFlags* f, unsigned extras) {
  app->add_option("STORE", *url,
                  "Store URL: file:///path, http(s)://host/path (WebDAV) or s3://bucket/prefix")
      ->required();
  // Listed apart in --help, after the command's own options.
  auto* group = app->add_option_group("Store", "How to reach and read the store");
  AddCommonFlags(group, f);
  if ((extras & kStoreEncrypt) != 0) AddEncryptFlag(group, f);
  if ((extras & kStoreBwlimit) != 0) AddBwlimitFlag(group, f);
}

namespace {

std::string EnvOr(const char* a, const char* b) {
  for (const char* name : {a, b}) {
    const char* v = name != nullptr ? std::getenv(name) : nullptr;
    if (v != nullptr && *v != '\0') return v;
  }
  return "";
}

}  // namespace

Result<std::unique_ptr<Store>> OpenStoreWith(const std::string& url, const StoreFlags& f,
                                             int jobs) {
  StoreOptions o;
  o.endpoint =
      !f.s3_endpoint.empty() ? f.s3_endpoint : EnvOr("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL");
  if (!o.endpoint.empty() && !o.endpoint.starts_with("http://") &&
      !o.endpoint.starts_with("https://")) {
    return Status::InvalidArgument("--s3-endpoint must be an http:// or https:// URL");
  }
  o.region = !f.s3_region.empty() ? f.s3_region : EnvOr("AWS_REGION", "AWS_DEFAULT_REGION");
  if (f.s3_virtual_host) {
    if (o.endpoint.empty()) {
      return Status::InvalidArgument("--s3-virtual-host needs --s3-endpoint");
    }
    o.path_style = false;
  }
  if (!f.cacert.empty() && ::access(f.cacert.c_str(), R_OK) != 0) {
    return Status::InvalidArgument("--cacert " + f.cacert + ": cannot read the file");
  }
  o.ca_file = f.cacert;
  o.insecure = f.insecure;
  if (f.insecure) {
    std::fprintf(stderr,
                 "cutover: warning: --insecure: the store's TLS certificate is not "
                 "verified\n");
  }
  if (!f.bwlimit.empty()) {
    CUTOVER_ASSIGN_OR_RETURN(double bw, ParseBandwidth(f.bwlimit));
    if (!(bw / jobs >= 1024)) {
      return Status::InvalidArgument("--bwlimit " + f.bwlimit +
                                     " leaves under 1 KiB/s to each of " + std::to_string(jobs) +
                                     " transfers");
    }
    o.http.rate_limit = std::make_shared<RateLimiter>(bw);
  }
  o.jobs = jobs;
  // The key is read before the store is touched, so a bad key file costs no request.
  std::optional<EncryptionKey> key;
  if (!f.encrypt.empty()) {
    CUTOVER_ASSIGN_OR_RETURN(key, EncryptionKey::FromFile(f.encrypt));
  }
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStore(url, o));
  // HTTP and S3 stores pass their bytes through the limiter in libcurl; a file:// store is
  // wrapped (under the encryption, so ciphertext is what is counted, as on the wire).
  if (o.http.rate_limit && url.starts_with("file://")) {
    store = RateLimitStore(std::move(store), o.http.rate_limit);
  }
  if (!f.takes_encrypt) return store;
  if (key.has_value()) store = EncryptStore(std::move(store), *key);
  // The config says whether the store is encrypted, and with which key: a mismatch is refused
  // here, before anything is read or written (a store with no config yet is new).
  Result<ChunkerParams> config = ReadStoreConfig(*store);
  if (!config.ok() && config.status().code() != Code::kNotFound) return config.status();
  return store;
}

}  // namespace cutover
