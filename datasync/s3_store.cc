#include "datasync/s3_store.h"

#include <charconv>
#include <cstring>
#include <utility>

#include "core/failpoint.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "datasync/aws_credentials.h"

namespace cutover {
namespace {

// SHA-256 of the empty string: the payload hash of GET, HEAD and DELETE.
constexpr char kEmptySha256[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr size_t kMaxErrorMessage = 300;

bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

bool IsAuthCode(std::string_view code) {
  static constexpr std::string_view kCodes[] = {
      "AccessDenied",    "SignatureDoesNotMatch", "InvalidAccessKeyId",
      "ExpiredToken",    "InvalidToken",          "AuthorizationHeaderMalformed",
      "InvalidSecurity", "RequestTimeTooSkewed",  "AllAccessDisabled"};
  for (auto c : kCodes) {
    if (code == c) return true;
  }
  return false;
}

class S3Store : public Store {
 public:
  S3Store(std::string url, std::string object_base, std::string list_url, std::string prefix,
          int page_size, AwsCredentials creds, HttpClientOptions http)
      : url_(std::move(url)),
        object_base_(std::move(object_base)),
        list_url_(std::move(list_url)),
        prefix_(std::move(prefix)),
        page_size_(page_size),
        session_token_(std::move(creds.session_token)),
        client_(std::move(http)) {}

  std::string Url() const override { return url_; }

  Status Put(std::string_view key, std::string_view bytes) override {
    CUTOVER_RETURN_IF_ERROR(ValidateKey(key));
    std::string url = object_base_ + std::string(key);
    HttpRequest req = Request("PUT", url, Sha256Hex(bytes));
    req.upload = HttpUploadSource::FromBytes(bytes);
    CUTOVER_ASSIGN_OR_RETURN(HttpResponse r, client_.Send(req));
    if (r.status != 200) return ErrorFor(req.method, url, r);
    CUTOVER_FAILPOINT("store.put.after");
    return Status::Ok();
  }

  Result<std::string> Get(std::string_view key) override {
    CUTOVER_RETURN_IF_ERROR(ValidateKey(key));
    std::string url = object_base_ + std::string(key);
    HttpRequest req = Request("GET", url, kEmptySha256);
    CUTOVER_ASSIGN_OR_RETURN(HttpResponse r, client_.Send(req));
    if (r.status == 200) return std::move(r.body);
    return ErrorFor(req.method, url, r);
  }

  Result<std::string> GetRange(std::string_view key, uint64_t offset, uint64_t length) override {
    CUTOVER_RETURN_IF_ERROR(ValidateKey(key));
    std::string url = object_base_ + std::string(key);
    if (length == 0) {
      CUTOVER_ASSIGN_OR_RETURN(uint64_t size, Head(key));
      if (size < offset) return ShorterError(url, size, offset, length);
      return std::string();
    }
    HttpRequest req = Request("GET", url, kEmptySha256);
    req.headers.push_back(
        {"Range", "bytes=" + std::to_string(offset) + "-" + std::to_string(offset + length - 1)});
    CUTOVER_ASSIGN_OR_RETURN(HttpResponse r, client_.Send(req));
    if (r.status == 416) {
      // S3 answers InvalidRange with an error document, not a Content-Range total.
      return Status::Corruption("GET " + url + ": object is shorter than offset " +
                                std::to_string(offset) + " + length " + std::to_string(length));
    }
    if (r.status != 200 && r.status != 206) return ErrorFor(req.method, url, r);
    return TakeRange(url, std::move(r), offset, length);
  }

  Result<uint64_t> Head(std::string_view key) override {
    CUTOVER_RETURN_IF_ERROR(ValidateKey(key));
    std::string url = object_base_ + std::string(key);
    HttpRequest req = Request("HEAD", url, kEmptySha256);
    CUTOVER_ASSIGN_OR_RETURN(HttpResponse r, client_.Send(req));
    if (r.status != 200) return ErrorFor(req.method, url, r);
    std::optional<std::string> len = r.Header("Content-Length");
    std::optional<uint64_t> size = len ? ParseDecimal<uint64_t>(*len) : std::nullopt;
    if (!size) return Status::Unavailable("HEAD " + url + ": no valid Content-Length");
    return *size;
  }

  Status List(std::string_view prefix,
              const std::function<Status(std::string_view key, uint64_t size)>& fn) override {
    for (char c : prefix) {
      if (!NameChar(c) && c != '/') {
        return Status::InvalidArgument("bad store key prefix \"" + std::string(prefix) +
                                       "\": character outside [A-Za-z0-9._-/]");
      }
    }
    std::string full = prefix_ + std::string(prefix);
    std::string token;
    for (int page = 0;; ++page) {
      // Already canonical: names in byte order, values SigV4-encoded.
      std::string query;
      if (!token.empty()) query += "continuation-token=" + AwsUriEncode(token, false) + "&";
      query += "list-type=2&max-keys=" + std::to_string(page_size_);
      if (!full.empty()) query += "&prefix=" + AwsUriEncode(full, false);
      std::string url = list_url_ + "?" + query;
      HttpRequest req = Request("GET", url, kEmptySha256);
      CUTOVER_ASSIGN_OR_RETURN(HttpResponse r, client_.Send(req));
      if (r.status != 200) return ErrorFor(req.method, url, r);
      auto parsed = ParseS3ListObjectsV2(r.body);
      if (!parsed.ok()) return parsed.status().WithContext("GET " + url);
      for (const S3ListPage::Object& o : parsed->objects) {
        if (!o.key.starts_with(full)) continue;  // a server ignoring prefix
        std::string_view rel = std::string_view(o.key).substr(prefix_.size());
        if (!ValidateKey(rel).ok()) continue;  // not one of ours
        CUTOVER_RETURN_IF_ERROR(fn(rel, o.size));
      }
      if (!parsed->truncated) break;
      if (parsed->next_token == token) {
        return Status::Unavailable("GET " + url + ": the server repeated its continuation token");
      }
      token = parsed->next_token;
    }
    return Status::Ok();
  }

  Status Delete(std::string_view key) override {
    CUTOVER_RETURN_IF_ERROR(ValidateKey(key));
    std::string url = object_base_ + std::string(key);
    HttpRequest req = Request("DELETE", url, kEmptySha256);
    CUTOVER_ASSIGN_OR_RETURN(HttpResponse r, client_.Send(req));
    if ((r.status >= 200 && r.status < 300) || r.status == 404) return Status::Ok();
    return ErrorFor(req.method, url, r);
  }

 private:
  HttpRequest Request(std::string method, std::string url, std::string payload_sha256) const {
    HttpRequest req{.method = std::move(method), .url = std::move(url)};
    req.headers.push_back({"x-amz-content-sha256", std::move(payload_sha256)});
    if (!session_token_.empty()) req.headers.push_back({"x-amz-security-token", session_token_});
    return req;
  }

  static Status ErrorFor(const std::string& method, const std::string& url, const HttpResponse& r) {
    std::string where = method + " " + url + ": ";
    std::optional<S3Error> e = ParseS3Error(r.body);
    std::string detail = "HTTP " + std::to_string(r.status);
    if (e) {
      detail += " " + e->code;
      if (!e->message.empty()) detail += ": " + e->message.substr(0, kMaxErrorMessage);
    }
    std::string_view code = e ? std::string_view(e->code) : std::string_view();
    if (code == "NoSuchBucket") {
      return Status::FailedPrecondition(where + "the bucket does not exist (" + detail + ")");
    }
    if (code == "NoSuchKey" || (r.status == 404 && code.empty())) {
      return Status::NotFound(where + "not found (" + detail + ")");
    }
    if (r.status == 401 || r.status == 403 || IsAuthCode(code)) {
      return Status::FailedPrecondition(where + "permission denied (" + detail + ")");
    }
    if (r.status >= 500) {
      return Status::Unavailable(where + detail + " after " + std::to_string(r.stats.attempts) +
                                 (r.stats.attempts == 1 ? " attempt" : " attempts"));
    }
    return Status::Unavailable(where + "unexpected " + detail);
  }

  const std::string url_;          // s3://bucket/prefix
  const std::string object_base_;  // http(s)://.../[bucket/]prefix/ : + key = object URL
  const std::string list_url_;     // the bucket URL ListObjectsV2 goes to
  const std::string prefix_;       // "" or "prefix/"
  const int page_size_;
  const std::string session_token_;
  HttpClient client_;
};

// Collects the text of the elements at depth 2 (and of Contents' children) by local name.
struct ListParser {
  S3ListPage page;
  std::string text;
  bool root_ok = false;
  bool in_contents = false;
  std::optional<std::string> key;
  std::optional<uint64_t> size;
  bool bad_size = false;
  std::string truncated;

  Status On(const XmlEvent& ev) {
    if (ev.kind == XmlEvent::Kind::kText) {
      if (text.size() < 65536) text += ev.text;
      return Status::Ok();
    }
    if (ev.kind == XmlEvent::Kind::kStart) {
      text.clear();
      if (ev.depth == 1) {
        if (ev.local != "ListBucketResult") {
          return Status::Corruption("not a ListBucketResult (root <" + std::string(ev.local) +
                                    ">)");
        }
        root_ok = true;
      } else if (ev.depth == 2 && ev.local == "Contents") {
        in_contents = true;
        key.reset();
        size.reset();
        bad_size = false;
      }
      return Status::Ok();
    }
    if (ev.depth == 3 && in_contents) {
      if (ev.local == "Key") {
        key = text;
      } else if (ev.local == "Size") {
        size = ParseDecimal<uint64_t>(text);
        bad_size = !size;
      }
    } else if (ev.depth == 2) {
      if (ev.local == "Contents") {
        in_contents = false;
        if (!key || key->empty())
          return Status::Corruption("ListBucketResult: Contents without Key");
        if (bad_size || !size) {
          return Status::Corruption("ListBucketResult: bad or missing Size for " +
                                    key->substr(0, 200));
        }
        page.objects.push_back({std::move(*key), *size});
      } else if (ev.local == "IsTruncated") {
        truncated = std::string(Trim(text));
      } else if (ev.local == "NextContinuationToken") {
        page.next_token = std::string(Trim(text));
      }
    }
    text.clear();
    return Status::Ok();
  }
};

}  // namespace

std::string AwsUriEncode(std::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out.push_back(c);
    } else {
      unsigned char u = static_cast<unsigned char>(c);
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  return out;
}

Result<S3ListPage> ParseS3ListObjectsV2(std::string_view xml) {
  ListParser p;
  CUTOVER_RETURN_IF_ERROR(ScanXml(xml, [&](const XmlEvent& ev) { return p.On(ev); }));
  if (!p.root_ok) return Status::Corruption("not a ListBucketResult");
  if (p.truncated == "true") {
    p.page.truncated = true;
  } else if (!p.truncated.empty() && p.truncated != "false") {
    return Status::Corruption("ListBucketResult: bad IsTruncated \"" + p.truncated.substr(0, 20) +
                              "\"");
  }
  if (p.page.truncated && p.page.next_token.empty()) {
    return Status::Corruption("ListBucketResult: IsTruncated without NextContinuationToken");
  }
  return std::move(p.page);
}

std::optional<S3Error> ParseS3Error(std::string_view xml) {
  S3Error e;
  bool root_ok = false;
  std::string text;
  Status s = ScanXml(xml, [&](const XmlEvent& ev) -> Status {
    if (ev.kind == XmlEvent::Kind::kText) {
      if (text.size() < 4096) text += ev.text;
    } else if (ev.kind == XmlEvent::Kind::kStart) {
      text.clear();
      if (ev.depth == 1) {
        if (ev.local != "Error") return Status::Corruption("not an S3 error");
        root_ok = true;
      }
    } else {
      if (ev.depth == 2 && ev.local == "Code") e.code = std::string(Trim(text));
      if (ev.depth == 2 && ev.local == "Message") e.message = std::string(Trim(text));
      text.clear();
    }
    return Status::Ok();
  });
  if (!s.ok() || !root_ok || e.code.empty()) return std::nullopt;
  return e;
}

Result<std::unique_ptr<Store>> OpenS3Store(std::string_view url, const StoreOptions& options) {
  if (!url.starts_with("s3://")) {
    return Status::InvalidArgument("bad S3 store URL: expected s3://bucket/prefix");
  }
  std::string_view rest = url.substr(5);
  size_t slash = rest.find('/');
  std::string bucket(rest.substr(0, slash));
  std::string_view prefix_in =
      slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  if (bucket.empty() || bucket.size() > 63) {
    return Status::InvalidArgument("bad S3 store URL: the bucket name must be 1 to 63 characters");
  }
  for (char c : bucket) {
    if (!NameChar(c)) {
      return Status::InvalidArgument("bad S3 bucket name \"" + bucket +
                                     "\": use letters, digits, '.', '_' and '-'");
    }
  }
  while (!prefix_in.empty() && prefix_in.back() == '/') prefix_in.remove_suffix(1);
  std::string prefix;
  if (!prefix_in.empty()) {
    prefix = std::string(prefix_in) + "/";
    if (!ValidateKey(prefix_in).ok()) {
      return Status::InvalidArgument("bad S3 store prefix \"" + std::string(prefix_in) +
                                     "\": use '/'-separated components of [A-Za-z0-9._-]");
    }
  }
  if (options.list_page_size < 1 || options.list_page_size > 1000) {
    return Status::InvalidArgument("S3 list page size must be 1..1000, not " +
                                   std::to_string(options.list_page_size));
  }
  std::string region = options.region.empty() ? "us-east-1" : options.region;
  for (char c : region) {
    if (!NameChar(c)) return Status::InvalidArgument("bad S3 region \"" + region + "\"");
  }
  std::string scheme = "https://";
  std::string host;
  if (options.endpoint.empty()) {
    host = "s3." + region + ".amazonaws.com";
  } else {
    std::string_view ep = options.endpoint;
    if (ep.starts_with("http://")) {
      scheme = "http://";
    } else if (!ep.starts_with("https://")) {
      return Status::InvalidArgument("bad S3 endpoint: expected http(s)://host[:port]");
    }
    ep.remove_prefix(scheme.size());
    while (!ep.empty() && ep.back() == '/') ep.remove_suffix(1);
    if (ep.empty() || ep.find_first_of("/?#@ ") != std::string_view::npos) {
      return Status::InvalidArgument(
          "bad S3 endpoint: expected http(s)://host[:port] without a path or credentials");
    }
    host = std::string(ep);
  }
  bool path_style = options.path_style.value_or(!options.endpoint.empty());
  std::string object_base, list_url;
  if (path_style) {
    list_url = scheme + host + "/" + bucket;
    object_base = list_url + "/" + prefix;
  } else {
    list_url = scheme + bucket + "." + host + "/";
    object_base = list_url + prefix;
  }

  const EnvLookup env = options.getenv ? EnvLookup(options.getenv) : EnvLookup(ProcessEnv);
  auto creds = LoadAwsCredentials(env);
  if (!creds.ok()) return creds.status();

  HttpClientOptions http = options.http;
  http.ca_file = options.ca_file;
  http.insecure = options.insecure;
  http.aws_sigv4 = "aws:amz:" + region + ":s3";
  http.username = creds->access_key_id;
  http.password = creds->secret_access_key;
  std::string clean = "s3://" + bucket + (prefix.empty() ? "" : "/" + std::string(prefix_in));
  return std::unique_ptr<Store>(std::make_unique<S3Store>(
      std::move(clean), std::move(object_base), std::move(list_url), std::move(prefix),
      options.list_page_size, std::move(creds).value(), std::move(http)));
}

}  // namespace cutover
