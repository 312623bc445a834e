#include "datasync/aws_credentials.h"

#include <cctype>
#include <cstdlib>
#include <cstring>

#include "core/file_util.h"
#include "core/strings.h"

namespace cutover {
namespace {

std::optional<std::string> NonEmpty(const EnvLookup& env, std::string_view name) {
  std::optional<std::string> v = env(name);
  if (v && v->empty()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<std::string> ProcessEnv(std::string_view name) {
  const char* v = std::getenv(std::string(name).c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

Result<AwsCredentials> ParseAwsCredentialsFile(std::string_view text, std::string_view profile,
                                               std::string_view file) {
  std::string where = "AWS profile \"" + std::string(profile) + "\"";
  bool found = false;
  bool in_profile = false;
  AwsCredentials c;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view raw = text.substr(0, nl);
    std::string_view line = Trim(raw);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      if (line.back() != ']') {
        return Status::InvalidArgument(std::string(file) + ":" + std::to_string(line_no) +
                                       ": bad section header");
      }
      std::string_view name = Trim(line.substr(1, line.size() - 2));
      in_profile = name == profile;
      found = found || in_profile;
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      // An indented line continues the value above (nested settings we do not read).
      if (std::isspace(static_cast<unsigned char>(raw[0]))) continue;
      return Status::InvalidArgument(std::string(file) + ":" + std::to_string(line_no) +
                                     ": expected key = value");
    }
    if (!in_profile) continue;
    std::string key = AsciiLower(Trim(line.substr(0, eq)));
    std::string value(Trim(line.substr(eq + 1)));
    if (key == "aws_access_key_id") {
      c.access_key_id = value;
    } else if (key == "aws_secret_access_key") {
      c.secret_access_key = value;
    } else if (key == "aws_session_token" || key == "aws_security_token") {
      c.session_token = value;
    }
  }
  std::string in_file = std::string(file);
  if (!found) return Status::FailedPrecondition(where + " not found in " + in_file);
  if (c.access_key_id.empty()) {
    return Status::FailedPrecondition(where + " in " + in_file + " has no aws_access_key_id");
  }
  if (c.secret_access_key.empty()) {
    return Status::FailedPrecondition(where + " in " + in_file + " has no aws_secret_access_key");
  }
  c.source = "profile \"" + std::string(profile) + "\" of " + in_file;
  return c;
}

Result<AwsCredentials> LoadAwsCredentials(const EnvLookup& env) {
  std::optional<std::string> id = NonEmpty(env, "AWS_ACCESS_KEY_ID");
  std::optional<std::string> secret = NonEmpty(env, "AWS_SECRET_ACCESS_KEY");
  if (id && !secret) {
    return Status::FailedPrecondition("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
  }
  if (secret && !id) {
    return Status::FailedPrecondition("AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not");
  }
  if (id) {
    AwsCredentials c;
    c.access_key_id = *id;
    c.secret_access_key = *secret;
    c.session_token = NonEmpty(env, "AWS_SESSION_TOKEN").value_or("");
    c.source = "environment";
    return c;
  }
  std::string profile = NonEmpty(env, "AWS_PROFILE").value_or("default");
  std::string file;
  if (auto f = NonEmpty(env, "AWS_SHARED_CREDENTIALS_FILE")) {
    file = *f;
  } else if (auto home = NonEmpty(env, "HOME")) {
    file = *home + "/.aws/credentials";
  } else {
    return Status::FailedPrecondition(
        "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (HOME is not set, "
        "so there is no ~/.aws/credentials)");
  }
  Result<std::string> text = ReadFile(file);
  if (!text.ok() && text.status().code() == Code::kNotFound) {
    return Status::FailedPrecondition(
        "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or add profile \"" +
        profile + "\" to " + file + " (AWS_PROFILE, AWS_SHARED_CREDENTIALS_FILE)");
  }
  if (!text.ok()) {
    return Status::IoError("cannot read AWS credentials file: " + text.status().message());
  }
  return ParseAwsCredentialsFile(*text, profile, file);
}

}  // namespace cutover
