// AWS credentials for the S3 store, from the places the AWS tools read them, and no others:
//   1. AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN) in the environment;
//   2. else profile $AWS_PROFILE (default "default") of the shared credentials file
//      $AWS_SHARED_CREDENTIALS_FILE (default ~/.aws/credentials): keys aws_access_key_id,
//      aws_secret_access_key, aws_session_token (or the older aws_security_token).
// Never from the command line. No message or log line contains a key or token value.
//
// Thread-safety: the functions are pure given their environment lookup; safe from any thread
// when the lookup is.
#ifndef CUTOVER_DATASYNC_AWS_CREDENTIALS_H_
#define CUTOVER_DATASYNC_AWS_CREDENTIALS_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace cutover {

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty when none (sent as X-Amz-Security-Token otherwise)
  std::string source;         // where they came from, for messages: "environment", or
                              // "profile \"default\" of /home/u/.aws/credentials"
};

// Looks up an environment variable; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

// The process environment.
std::optional<std::string> ProcessEnv(std::string_view name);

// Loads credentials by the rules above. FailedPrecondition with one line naming what is missing:
//   "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"
//   "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or add profile
//    \"default\" to /home/u/.aws/credentials (AWS_PROFILE, AWS_SHARED_CREDENTIALS_FILE)"
//   "AWS profile \"p\" not found in FILE", "AWS profile \"p\" in FILE has no aws_access_key_id"
// IoError when the file exists but cannot be read; InvalidArgument for a malformed file.
Result<AwsCredentials> LoadAwsCredentials(const EnvLookup& env = ProcessEnv);

// Reads profile `profile` from the text of a credentials file (`file` names it in messages).
// INI syntax: [name] sections, key = value lines, '#' and ';' comment lines, keys
// case-insensitive, the last value of a repeated key wins.
Result<AwsCredentials> ParseAwsCredentialsFile(std::string_view text, std::string_view profile,
                                               std::string_view file);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_AWS_CREDENTIALS_H_
