// The S3 store (s3://bucket/prefix): objects under `prefix/` of one bucket of AWS S3 or any
// S3-compatible server (StoreOptions::endpoint), requests signed with AWS Signature Version 4 by
// libcurl (CURLOPT_AWS_SIGV4 "aws:amz:<region>:s3") with credentials from
// datasync/aws_credentials.h.
//
//   auto store = OpenS3Store("s3://bucket/data", {.endpoint = "http://127.0.0.1:9000"});
//
// Every request carries x-amz-content-sha256, set here (libcurl 7.88 signs the value given and
// adds none itself for PUT): the hex SHA-256 of the body. Put always has its bytes in memory, so
// no request is sent with UNSIGNED-PAYLOAD. With a session token, X-Amz-Security-Token is sent
// (and signed). Query strings are built already canonical (parameters sorted by name, values
// percent-encoded per SigV4), so the signature does not depend on how libcurl canonicalizes them.
// List is ListObjectsV2 page by page (continuation tokens), one page in memory at a time.
//
// Status mapping: NoSuchKey / 404 NotFound; AccessDenied, SignatureDoesNotMatch,
// InvalidAccessKeyId, other 401/403, and NoSuchBucket FailedPrecondition naming the S3 error code;
// SlowDown and other 5xx are retried by the HTTP client, then Unavailable naming the code.
//
// Thread-safety: S3Store is safe for concurrent use; the parsers are pure.
#ifndef CUTOVER_DATASYNC_S3_STORE_H_
#define CUTOVER_DATASYNC_S3_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "datasync/store.h"
#include "datasync/webdav_store.h"  // StoreOptions, ScanXml

namespace cutover {

// Opens the S3 store at `url` ("s3://bucket" or "s3://bucket/prefix"). InvalidArgument for a bad
// URL or option; FailedPrecondition when no credentials are found (one line saying where it
// looked). Sends nothing.
Result<std::unique_ptr<Store>> OpenS3Store(std::string_view url, const StoreOptions& options);

// One page of a ListObjectsV2 answer.
struct S3ListPage {
  struct Object {
    std::string key;  // the full key in the bucket
    uint64_t size = 0;
  };
  std::vector<Object> objects;
  bool truncated = false;
  std::string next_token;  // NextContinuationToken when truncated
};

// Parses a ListBucketResult document (namespace ignored). Corruption for malformed XML, another
// root element, a Contents without Key or with a bad Size, or IsTruncated true without a token.
Result<S3ListPage> ParseS3ListObjectsV2(std::string_view xml);

// An S3 error document: <Error><Code>..</Code><Message>..</Message></Error>.
struct S3Error {
  std::string code;
  std::string message;
};
// The error in `xml`, or nullopt when it is not a well-formed Error document.
std::optional<S3Error> ParseS3Error(std::string_view xml);

// SigV4 URI encoding: every byte but A-Z a-z 0-9 - _ . ~ as %XX (upper-case hex); '/' kept
// when `keep_slash`.
std::string AwsUriEncode(std::string_view s, bool keep_slash);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_S3_STORE_H_
