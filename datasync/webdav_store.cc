#include "datasync/webdav_store.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <utility>

#include "core/failpoint.h"
#include "core/log.h"
#include "core/strings.h"

namespace cutover {
namespace {

constexpr int kMaxXmlDepth = 64;
constexpr std::string_view kDavNs = "DAV:";

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool IsNameStart(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  return std::isalpha(u) || c == '_' || c == ':' || u >= 0x80;
}

bool IsNameChar(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  return IsNameStart(c) || std::isdigit(u) || c == '-' || c == '.';
}

bool StartsWithAt(std::string_view s, size_t pos, std::string_view what) {
  return pos <= s.size() && s.substr(pos).starts_with(what);
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// The XML scanner: a cursor over the document, a stack of open elements and of xmlns bindings.
class XmlScanner {
 public:
  XmlScanner(std::string_view xml, const std::function<Status(const XmlEvent&)>& fn)
      : xml_(xml), fn_(fn) {}

  Status Run() {
    while (pos_ < xml_.size()) {
      if (xml_[pos_] != '<') {
        CUTOVER_RETURN_IF_ERROR(Text());
        continue;
      }
      if (StartsWithAt(xml_, pos_, "<?")) {
        CUTOVER_RETURN_IF_ERROR(SkipPast("?>", "unterminated processing instruction"));
      } else if (StartsWithAt(xml_, pos_, "<!--")) {
        CUTOVER_RETURN_IF_ERROR(SkipPast("-->", "unterminated comment"));
      } else if (StartsWithAt(xml_, pos_, "<![CDATA[")) {
        CUTOVER_RETURN_IF_ERROR(Cdata());
      } else if (StartsWithAt(xml_, pos_, "<!DOCTYPE")) {
        CUTOVER_RETURN_IF_ERROR(Doctype());
      } else if (StartsWithAt(xml_, pos_, "</")) {
        CUTOVER_RETURN_IF_ERROR(EndTag());
      } else {
        CUTOVER_RETURN_IF_ERROR(StartTag());
      }
    }
    if (!open_.empty()) return Error("unexpected end inside <" + open_.back().qname + ">");
    if (!seen_root_) return Error("no root element");
    return Status::Ok();
  }

 private:
  struct Open {
    std::string qname;
    std::string ns;
    size_t bindings_before = 0;
  };
  struct Binding {
    std::string prefix;  // "" for the default namespace
    std::string uri;
  };

  Status Error(const std::string& what) const {
    return Status::Corruption("bad XML at byte " + std::to_string(pos_) + ": " + what);
  }

  Status SkipPast(std::string_view end, const char* what) {
    size_t e = xml_.find(end, pos_);
    if (e == std::string_view::npos) return Error(what);
    pos_ = e + end.size();
    return Status::Ok();
  }

  Status Doctype() {
    if (seen_root_) return Error("DOCTYPE after the root element");
    size_t e = xml_.find_first_of("[>", pos_);
    if (e == std::string_view::npos) return Error("unterminated DOCTYPE");
    if (xml_[e] == '[') return Error("DOCTYPE with an internal subset");
    pos_ = e + 1;
    return Status::Ok();
  }

  Status EmitText(std::string text) {
    if (open_.empty()) {
      for (char c : text) {
        if (!IsSpace(c)) return Error("text outside the root element");
      }
      return Status::Ok();
    }
    XmlEvent ev;
    ev.kind = XmlEvent::Kind::kText;
    ev.text = std::move(text);
    ev.depth = static_cast<int>(open_.size());
    return fn_(ev);
  }

  Status Cdata() {
    size_t start = pos_ + 9;
    size_t e = xml_.find("]]>", start);
    if (e == std::string_view::npos) return Error("unterminated CDATA section");
    if (open_.empty()) return Error("CDATA outside the root element");
    pos_ = e + 3;
    return EmitText(std::string(xml_.substr(start, e - start)));
  }

  // Decodes character data or an attribute value up to (not including) a byte in `stops`.
  Status Decode(std::string_view stops, std::string* out) {
    while (pos_ < xml_.size() && stops.find(xml_[pos_]) == std::string_view::npos) {
      char c = xml_[pos_];
      if (c != '&') {
        out->push_back(c);
        ++pos_;
        continue;
      }
      size_t semi = xml_.find(';', pos_);
      if (semi == std::string_view::npos || semi - pos_ > 12) return Error("bad entity reference");
      std::string_view name = xml_.substr(pos_ + 1, semi - pos_ - 1);
      if (name == "amp") {
        out->push_back('&');
      } else if (name == "lt") {
        out->push_back('<');
      } else if (name == "gt") {
        out->push_back('>');
      } else if (name == "quot") {
        out->push_back('"');
      } else if (name == "apos") {
        out->push_back('\'');
      } else if (name.size() >= 2 && name[0] == '#') {
        bool hex = name[1] == 'x';
        std::string_view digits = name.substr(hex ? 2 : 1);
        uint32_t cp = 0;
        auto [p, ec] =
            std::from_chars(digits.data(), digits.data() + digits.size(), cp, hex ? 16 : 10);
        if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size() || cp == 0 ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
          return Error("bad character reference &" + std::string(name) + ";");
        }
        AppendUtf8(cp, out);
      } else {
        return Error("unknown entity &" + std::string(name) + ";");
      }
      pos_ = semi + 1;
    }
    return Status::Ok();
  }

  Status Text() {
    std::string text;
    CUTOVER_RETURN_IF_ERROR(Decode("<", &text));
    return EmitText(std::move(text));
  }

  Status Name(std::string* out) {
    if (pos_ >= xml_.size() || !IsNameStart(xml_[pos_])) return Error("expected a name");
    size_t start = pos_;
    while (pos_ < xml_.size() && IsNameChar(xml_[pos_])) ++pos_;
    *out = std::string(xml_.substr(start, pos_ - start));
    return Status::Ok();
  }

  void SkipSpace() {
    while (pos_ < xml_.size() && IsSpace(xml_[pos_])) ++pos_;
  }

  // Splits "p:local" and resolves p (or the default namespace) through the bindings.
  Status Resolve(const std::string& qname, std::string* ns, std::string_view* local) const {
    size_t colon = qname.find(':');
    std::string prefix;
    *local = qname;
    if (colon != std::string::npos) {
      prefix = qname.substr(0, colon);
      *local = std::string_view(qname).substr(colon + 1);
      if (prefix.empty() || local->empty() || local->find(':') != std::string_view::npos) {
        return Error("bad qualified name <" + qname + ">");
      }
    }
    for (auto it = bindings_.rbegin(); it != bindings_.rend(); ++it) {
      if (it->prefix == prefix) {
        *ns = it->uri;
        return Status::Ok();
      }
    }
    if (prefix.empty()) {
      ns->clear();
      return Status::Ok();
    }
    if (prefix == "xml") {
      *ns = "http://www.w3.org/XML/1998/namespace";
      return Status::Ok();
    }
    return Error("undeclared namespace prefix in <" + qname + ">");
  }

  Status StartTag() {
    if (seen_root_ && open_.empty()) return Error("a second root element");
    if (static_cast<int>(open_.size()) >= kMaxXmlDepth) return Error("nesting too deep");
    ++pos_;
    Open el;
    CUTOVER_RETURN_IF_ERROR(Name(&el.qname));
    el.bindings_before = bindings_.size();
    bool empty = false;
    while (true) {
      bool had_space = pos_ < xml_.size() && IsSpace(xml_[pos_]);
      SkipSpace();
      if (pos_ >= xml_.size()) return Error("unterminated start tag <" + el.qname + ">");
      if (xml_[pos_] == '>') {
        ++pos_;
        break;
      }
      if (StartsWithAt(xml_, pos_, "/>")) {
        pos_ += 2;
        empty = true;
        break;
      }
      if (!had_space) return Error("expected a space before an attribute");
      std::string attr;
      CUTOVER_RETURN_IF_ERROR(Name(&attr));
      SkipSpace();
      if (pos_ >= xml_.size() || xml_[pos_] != '=') return Error("expected '=' after " + attr);
      ++pos_;
      SkipSpace();
      if (pos_ >= xml_.size() || (xml_[pos_] != '"' && xml_[pos_] != '\'')) {
        return Error("expected a quoted value for " + attr);
      }
      char quote = xml_[pos_++];
      std::string value;
      CUTOVER_RETURN_IF_ERROR(Decode(std::string_view(quote == '"' ? "\"<" : "'<"), &value));
      if (pos_ >= xml_.size() || xml_[pos_] != quote) return Error("bad value for " + attr);
      ++pos_;
      if (attr == "xmlns") {
        bindings_.push_back({"", std::move(value)});
      } else if (attr.starts_with("xmlns:")) {
        if (attr.size() == 6 || value.empty()) return Error("bad namespace declaration " + attr);
        bindings_.push_back({attr.substr(6), std::move(value)});
      }
    }
    std::string_view local;
    CUTOVER_RETURN_IF_ERROR(Resolve(el.qname, &el.ns, &local));
    seen_root_ = true;
    open_.push_back(std::move(el));
    Open& top = open_.back();
    XmlEvent ev;
    ev.kind = XmlEvent::Kind::kStart;
    ev.ns = top.ns;
    ev.local = std::string_view(top.qname).substr(top.qname.size() - local.size());
    ev.depth = static_cast<int>(open_.size());
    CUTOVER_RETURN_IF_ERROR(fn_(ev));
    if (empty) return Close();
    return Status::Ok();
  }

  Status EndTag() {
    size_t start = pos_;
    pos_ += 2;
    std::string qname;
    CUTOVER_RETURN_IF_ERROR(Name(&qname));
    SkipSpace();
    if (pos_ >= xml_.size() || xml_[pos_] != '>') return Error("unterminated end tag");
    ++pos_;
    if (open_.empty() || open_.back().qname != qname) {
      pos_ = start;
      return Error(
          "end tag </" + qname + "> does not match" +
          (open_.empty() ? std::string(" any open element") : " <" + open_.back().qname + ">"));
    }
    return Close();
  }

  // Emits the end of the innermost element and pops it with its bindings.
  Status Close() {
    const Open& top = open_.back();
    size_t colon = top.qname.find(':');
    XmlEvent ev;
    ev.kind = XmlEvent::Kind::kEnd;
    ev.ns = top.ns;
    ev.local = colon == std::string::npos ? std::string_view(top.qname)
                                          : std::string_view(top.qname).substr(colon + 1);
    ev.depth = static_cast<int>(open_.size());
    Status s = fn_(ev);
    bindings_.resize(top.bindings_before);
    open_.pop_back();
    return s;
  }

  std::string_view xml_;
  const std::function<Status(const XmlEvent&)>& fn_;
  size_t pos_ = 0;
  bool seen_root_ = false;
  std::vector<Open> open_;
  std::vector<Binding> bindings_;
};

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The status code in "HTTP/1.1 200 OK", or 0.
int StatusLineCode(std::string_view line) {
  line = Trim(line);
  size_t sp = line.find(' ');
  if (sp == std::string_view::npos) return 0;
  std::string_view rest = line.substr(sp + 1);
  int code = 0;
  auto [p, ec] = std::from_chars(rest.data(), rest.data() + std::min<size_t>(3, rest.size()), code);
  return ec == std::errc() && p == rest.data() + 3 ? code : 0;
}

bool PrefixChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-' || c == '/';
}

// ---- the store ----

class WebDavStore : public Store {
 public:
  WebDavStore(std::string url, std::string base, std::string base_path, HttpClientOptions http)
      : url_(std::move(url)),
        base_(std::move(base)),
        base_path_(std::move(base_path)),
        client_(std::move(http)) {}

  std::string Url() const override { return url_; }

  Status Put(std::string_view key, std::string_view bytes) override {
    CUTOVER_RETURN_IF_ERROR(ValidateKey(key));
    std::string url = base_ + std::string(key);
    CUTOVER_ASSIGN_OR_RETURN(HttpResponse r, SendPut(url, bytes));
    if (r.status == 409) {
      // The server does not create parent collections: make them, then PUT again.
      CUTOVER_RETURN_IF_ERROR(MakeParents(key));
      CUTOVER_ASSIGN_OR_RETURN(r, SendPut(url, bytes));
    }
    if (r.status < 200 || r.status >= 300) return ErrorFor("PUT", url, r);
    CUTOVER_FAILPOINT("store.put.after");
    return Status::Ok();
  }

  Result<std::string> Get(std::string_view key) override {
    CUTOVER_RETURN_IF_ERROR(ValidateKey(key));
    std::string url = base_ + std::string(key);
    CUTOVER_ASSIGN_OR_RETURN(HttpResponse r, client_.Send({.method = "GET", .url = url}));
    if (r.status == 200) return std::move(r.body);
    return ErrorFor("GET", url, r);
  }

  Result<std::string> GetRange(std::string_view key, uint64_t offset, uint64_t length) override {
    CUTOVER_RETURN_IF_ERROR(ValidateKey(key));
    std::string url = base_ + std::string(key);
    if (length == 0) {
      CUTOVER_ASSIGN_OR_RETURN(uint64_t size, Head(key));
      if (size < offset) return ShorterError(url, size, offset, length);
      return std::string();
    }
    HttpRequest req{.method = "GET", .url = url};
    req.headers.push_back(
        {"Range", "bytes=" + std::to_string(offset) + "-" + std::to_string(offset + length - 1)});
    CUTOVER_ASSIGN_OR_RETURN(HttpResponse r, client_.Send(req));
    if (r.status != 200 && r.status != 206 && r.status != 416) return ErrorFor("GET", url, r);
    return TakeRange(url, std::move(r), offset, length);
  }

  Result<uint64_t> Head(std::string_view key) override {
    CUTOVER_RETURN_IF_ERROR(ValidateKey(key));
    std::string url = base_ + std::string(key);
    CUTOVER_ASSIGN_OR_RETURN(HttpResponse r, client_.Send({.method = "HEAD", .url = url}));
    if (r.status != 200) return ErrorFor("HEAD", url, r);
    std::optional<std::string> len = r.Header("Content-Length");
    std::optional<uint64_t> size = len ? ParseDecimal<uint64_t>(*len) : std::nullopt;
    if (!size) return Status::Unavailable("HEAD " + url + ": no valid Content-Length");
    return *size;
  }

  Status List(std::string_view prefix,
              const std::function<Status(std::string_view key, uint64_t size)>& fn) override {
    for (char c : prefix) {
      if (!PrefixChar(c)) {
        return Status::InvalidArgument("bad store key prefix \"" + std::string(prefix) +
                                       "\": character outside [A-Za-z0-9._-/]");
      }
    }
    size_t slash = prefix.rfind('/');
    std::string first =
        slash == std::string_view::npos ? "" : std::string(prefix.substr(0, slash + 1));
    std::vector<std::string> todo{first};  // collections (keys ending in '/') still to list
    while (!todo.empty()) {
      std::string dir = std::move(todo.back());
      todo.pop_back();
      CUTOVER_ASSIGN_OR_RETURN(std::optional<std::vector<DavEntry>> entries, Propfind(dir));
      if (!entries) continue;  // gone (or never there): nothing under it
      for (const DavEntry& e : *entries) {
        if (!e.path.starts_with(base_path_)) continue;
        std::string rel = e.path.substr(base_path_.size());
        if (e.collection && !rel.empty() && rel.back() != '/') rel.push_back('/');
        if (rel == dir || rel + "/" == dir || rel.empty()) continue;  // the collection itself
        if (e.collection) {
          if (rel.starts_with(prefix) || prefix.starts_with(rel)) todo.push_back(rel);
          continue;
        }
        if (!rel.starts_with(prefix)) continue;
        if (!ValidateKey(rel).ok()) {
          CUTOVER_LOG(kDebug) << "webdav: skipping " << e.path << ": not a store key";
          continue;
        }
        uint64_t size = 0;
        if (e.size) {
          size = *e.size;
        } else {
          auto h = Head(rel);
          if (!h.ok() && h.status().code() == Code::kNotFound) continue;
          CUTOVER_ASSIGN_OR_RETURN(size, std::move(h));
        }
        CUTOVER_RETURN_IF_ERROR(fn(rel, size));
      }
    }
    return Status::Ok();
  }

  Status Delete(std::string_view key) override {
    CUTOVER_RETURN_IF_ERROR(ValidateKey(key));
    std::string url = base_ + std::string(key);
    CUTOVER_ASSIGN_OR_RETURN(HttpResponse r, client_.Send({.method = "DELETE", .url = url}));
    if ((r.status >= 200 && r.status < 300) || r.status == 404) return Status::Ok();
    return ErrorFor("DELETE", url, r);
  }

 private:
  Result<HttpResponse> SendPut(const std::string& url, std::string_view bytes) {
    HttpRequest req{.method = "PUT", .url = url};
    req.upload = HttpUploadSource::FromBytes(bytes);
    return client_.Send(req);
  }

  // MKCOL of the base collection and every parent of `key`, top down; "exists" answers are OK.
  Status MakeParents(std::string_view key) {
    std::vector<std::string> dirs{""};
    for (size_t slash = key.find('/'); slash != std::string_view::npos;
         slash = key.find('/', slash + 1)) {
      dirs.push_back(std::string(key.substr(0, slash + 1)));
    }
    for (const std::string& d : dirs) {
      std::string url = base_ + d;
      CUTOVER_ASSIGN_OR_RETURN(HttpResponse r, client_.Send({.method = "MKCOL", .url = url}));
      // 201 created; 405 (nginx, RFC 4918) or 301 when it is already there.
      if ((r.status >= 200 && r.status < 300) || r.status == 405 || r.status == 301) continue;
      return ErrorFor("MKCOL", url, r);
    }
    return Status::Ok();
  }

  // PROPFIND Depth: 1 of the collection `dir` ("" or a key prefix ending in '/'); nullopt on 404.
  Result<std::optional<std::vector<DavEntry>>> Propfind(const std::string& dir) {
    std::string url = base_ + dir;
    HttpRequest req{.method = "PROPFIND", .url = url};
    req.headers.push_back({"Depth", "1"});
    req.headers.push_back({"Content-Type", "application/xml; charset=utf-8"});
    req.body =
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
        "<D:propfind xmlns:D=\"DAV:\"><D:prop><D:resourcetype/><D:getcontentlength/>"
        "</D:prop></D:propfind>\n";
    CUTOVER_ASSIGN_OR_RETURN(HttpResponse r, client_.Send(req));
    if (r.status == 404) return std::optional<std::vector<DavEntry>>();
    if (r.status != 207 && r.status != 200) return ErrorFor("PROPFIND", url, r);
    auto parsed = ParseDavMultistatus(r.body);
    if (!parsed.ok()) return parsed.status().WithContext("PROPFIND " + url);
    return std::optional<std::vector<DavEntry>>(std::move(parsed).value());
  }

  static Status ErrorFor(const std::string& method, const std::string& url, const HttpResponse& r) {
    std::string where = method + " " + url + ": ";
    std::string code = "HTTP " + std::to_string(r.status);
    if (r.status == 401 || r.status == 403) {
      return Status::FailedPrecondition(where + "permission denied (" + code + ")");
    }
    if (r.status == 404) return Status::NotFound(where + "not found (" + code + ")");
    if (r.status >= 500) {
      return Status::Unavailable(where + code + " after " + std::to_string(r.stats.attempts) +
                                 (r.stats.attempts == 1 ? " attempt" : " attempts"));
    }
    return Status::Unavailable(where + "unexpected " + code);
  }

  const std::string url_;        // without credentials, no trailing '/'
  const std::string base_;       // scheme://host[:port]/path/ (ends in '/')
  const std::string base_path_;  // the decoded path of base_ ("/path/")
  HttpClient client_;
};

}  // namespace



Result<std::string> TakeRange(const std::string& url, HttpResponse r, uint64_t offset,
                              uint64_t length) {
  if (r.status == 200) {  // the server ignored Range: cut the full body here
    if (r.body.size() < offset + length) return ShorterError(url, r.body.size(), offset, length);
    return r.body.substr(offset, length);
  }
  if (r.status == 416) {
    std::optional<uint64_t> total;
    if (auto cr = r.Header("Content-Range"); cr && cr->starts_with("bytes */")) {
      total = ParseDecimal<uint64_t>(std::string_view(*cr).substr(8));
    }
    if (total) return ShorterError(url, *total, offset, length);
    return Status::Corruption("GET " + url + ": object is shorter than offset " +
                              std::to_string(offset) + " + length " + std::to_string(length));
  }
  // Content-Range: bytes FIRST-LAST/TOTAL
  std::optional<std::string> cr = r.Header("Content-Range");
  std::optional<uint64_t> first, last, total;
  if (cr && cr->starts_with("bytes ")) {
    std::string_view v = std::string_view(*cr).substr(6);
    size_t dash = v.find('-');
    size_t slash = v.find('/');
    if (dash != std::string_view::npos && slash != std::string_view::npos && dash < slash) {
      first = ParseDecimal<uint64_t>(v.substr(0, dash));
      last = ParseDecimal<uint64_t>(v.substr(dash + 1, slash - dash - 1));
      total = ParseDecimal<uint64_t>(v.substr(slash + 1));  // nullopt for "*"
    }
  }
  if (!first || !last || *last < *first || *first != offset ||
      r.body.size() != *last - *first + 1) {
    return Status::Unavailable("GET " + url + ": bad partial answer (Content-Range \"" +
                               cr.value_or("") + "\", " + std::to_string(r.body.size()) +
                               " bytes) for bytes " + std::to_string(offset) + "-" +
                               std::to_string(offset + length - 1));
  }
  if (r.body.size() < length) {
    return ShorterError(url, total.value_or(offset + r.body.size()), offset, length);
  }
  return std::move(r.body);
}

Status ShorterError(const std::string& url, uint64_t size, uint64_t offset, uint64_t length) {
  return Status::Corruption("GET " + url + ": object is " + std::to_string(size) +
                            " bytes, shorter than offset " + std::to_string(offset) + " + length " +
                            std::to_string(length));
}

Status ScanXml(std::string_view xml, const std::function<Status(const XmlEvent&)>& fn) {
  return XmlScanner(xml, fn).Run();
}

Result<std::string> PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    int hi = i + 2 < s.size() ? HexValue(s[i + 1]) : -1;
    int lo = i + 2 < s.size() ? HexValue(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      return Status::InvalidArgument("bad percent-escape at byte " + std::to_string(i) + " of \"" +
                                     std::string(s.substr(0, 200)) + "\"");
    }
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

Result<std::vector<DavEntry>> ParseDavMultistatus(std::string_view xml) {
  std::vector<DavEntry> entries;
  // Where we are: the DAV: element names from the root down ("" for any other element).
  std::vector<std::string> path;
  std::string text;
  bool in_response = false;
  std::optional<std::string> href;
  int response_status = 0;
  bool collection = false;
  bool ps_collection = false;
  std::optional<uint64_t> size, ps_size;
  int ps_status = 0;
  bool root_ok = false;

  auto under = [&](std::string_view parent) {
    return path.size() >= 2 && path[path.size() - 2] == parent;
  };
  Status s = ScanXml(xml, [&](const XmlEvent& ev) -> Status {
    if (ev.kind == XmlEvent::Kind::kText) {
      if (text.size() < 65536) text += ev.text;
      return Status::Ok();
    }
    std::string_view name = ev.ns == kDavNs ? ev.local : std::string_view();
    if (ev.kind == XmlEvent::Kind::kStart) {
      path.emplace_back(name);
      text.clear();
      if (path.size() == 1) {
        if (name != "multistatus") {
          return Status::Corruption("not a WebDAV multistatus (root <" + std::string(ev.local) +
                                    ">)");
        }
        root_ok = true;
      } else if (name == "response" && under("multistatus")) {
        in_response = true;
        href.reset();
        response_status = 0;
        collection = false;
        size.reset();
      } else if (name == "propstat" && in_response) {
        ps_collection = false;
        ps_size.reset();
        ps_status = 0;
      } else if (name == "collection" && under("resourcetype")) {
        ps_collection = true;
      }
      return Status::Ok();
    }
    // kEnd
    if (in_response) {
      if (name == "href" && under("response")) {
        href = std::string(Trim(text));
      } else if (name == "status" && under("response")) {
        response_status = StatusLineCode(text);
      } else if (name == "status" && under("propstat")) {
        ps_status = StatusLineCode(text);
      } else if (name == "getcontentlength" && under("prop")) {
        ps_size = ParseDecimal<uint64_t>(text);
      } else if (name == "propstat") {
        if (ps_status == 0 || (ps_status >= 200 && ps_status < 300)) {
          collection = collection || ps_collection;
          if (ps_size) size = ps_size;
        }
      } else if (name == "response" && path.size() == 2) {
        in_response = false;
        if (!href) return Status::Corruption("a WebDAV response without an href");
        if (response_status != 0 && (response_status < 200 || response_status >= 300)) {
          return Status::Ok();
        }
        std::string_view h = *href;
        // An absolute URL: drop scheme://authority, keep the path.
        if (size_t scheme = h.find("://");
            scheme != std::string_view::npos && h.substr(0, scheme).find('/') == h.npos) {
          size_t slash = h.find('/', scheme + 3);
          h = slash == std::string_view::npos ? std::string_view("/") : h.substr(slash);
        }
        auto decoded = PercentDecode(h);
        if (!decoded.ok()) return Status::Corruption("WebDAV href: " + decoded.status().message());
        DavEntry e;
        e.path = std::move(decoded).value();
        e.collection = collection;
        e.size = collection ? std::nullopt : size;
        entries.push_back(std::move(e));
      }
    }
    path.pop_back();
    text.clear();
    return Status::Ok();
  });
  if (!s.ok()) return s;
  if (!root_ok) return Status::Corruption("not a WebDAV multistatus");
  return entries;
}

Result<std::unique_ptr<Store>> OpenWebDavStore(std::string_view url, const StoreOptions& options) {
  std::string_view scheme;
  if (url.starts_with("http://")) {
    scheme = "http://";
  } else if (url.starts_with("https://")) {
    scheme = "https://";
  } else {
    return Status::InvalidArgument("bad WebDAV store URL: expected http(s)://host/path");
  }
  std::string_view rest = url.substr(scheme.size());
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return Status::InvalidArgument("bad WebDAV store URL: a query or fragment is not allowed");
  }
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  HttpClientOptions http = options.http;
  http.ca_file = options.ca_file;
  http.insecure = options.insecure;
  http.aws_sigv4.clear();
  http.username.clear();
  http.password.clear();
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
    std::string_view userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
    size_t colon = userinfo.find(':');
    auto user = PercentDecode(userinfo.substr(0, colon));
    auto pass = PercentDecode(colon == std::string_view::npos ? std::string_view()
                                                              : userinfo.substr(colon + 1));
    if (!user.ok() || !pass.ok()) {
      return Status::InvalidArgument("bad WebDAV store URL: bad percent-escape in the userinfo");
    }
    http.username = std::move(user).value();
    http.password = std::move(pass).value();
  }
  if (authority.empty()) return Status::InvalidArgument("bad WebDAV store URL: no host");
  for (char c : authority) {
    if (IsSpace(c) || c == '\\' || static_cast<unsigned char>(c) < 0x20) {
      return Status::InvalidArgument("bad WebDAV store URL: bad character in the host");
    }
  }
  while (path.size() > 1 && path.ends_with("//")) path.pop_back();
  if (!path.ends_with('/')) path.push_back('/');
  auto base_path = PercentDecode(path);
  if (!base_path.ok()) {
    return Status::InvalidArgument("bad WebDAV store URL: " + base_path.status().message());
  }
  std::string base = std::string(scheme) + std::string(authority) + path;
  std::string clean =
      path == "/" ? std::string(scheme) + std::string(authority) : base.substr(0, base.size() - 1);
  return std::unique_ptr<Store>(std::make_unique<WebDavStore>(
      std::move(clean), std::move(base), std::move(base_path).value(), std::move(http)));
}

}  // namespace cutover
