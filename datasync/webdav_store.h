// The WebDAV store (http:// and https:// URLs), the options every remote store takes, and the
// small XML reader that the WebDAV and S3 stores parse server answers with.
//
//   auto store = OpenWebDavStore("http://user:pw@127.0.0.1:8080/data", {});
//
// Objects live under the URL's path: key "chunks/ab/cd/<hex>" is PUT to
// http://host/data/chunks/ab/cd/<hex>. Put relies on the server creating parent collections
// (nginx `create_full_put_path on`); when a server answers 409 instead, the parents are created
// with MKCOL and the PUT is sent again. List walks collections with PROPFIND Depth: 1, one
// collection in memory at a time. Basic-auth credentials in the URL's userinfo move into the HTTP
// client's options; Url() and every message show the URL without them.
//
// Status mapping: 401/403 FailedPrecondition "... permission denied", 404 NotFound, a 5xx (after
// the HTTP client's retries) or a transport failure Unavailable.
//
// Thread-safety: WebDavStore is safe for concurrent use (one HttpClient, whose Send is
// thread-safe). The XML functions are pure.
#ifndef CUTOVER_DATASYNC_WEBDAV_STORE_H_
#define CUTOVER_DATASYNC_WEBDAV_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/http_client.h"
#include "core/status.h"
#include "datasync/store.h"

namespace cutover {


// Opens the WebDAV store at `url` (http:// or https://; the path is the store's base
// collection). InvalidArgument for a malformed URL. Sends nothing.
Result<std::unique_ptr<Store>> OpenWebDavStore(std::string_view url, const StoreOptions& options);

// ---- shared with the S3 store ----


// For a GET sent with "Range: bytes=<offset>-<offset+length-1>" (length >= 1): the requested bytes
// from a 206 answer, or cut from a 200 answer carrying the whole object. Corruption
// "GET <url>: object is N bytes, shorter than offset O + length L" when the object is shorter
// (or the answer is a 416); Unavailable for a 206 whose Content-Range or size does not match.
// REQUIRES: r.status is 200, 206 or 416.
Result<std::string> TakeRange(const std::string& url, HttpResponse r, uint64_t offset,
                              uint64_t length);
// The Corruption status above.
Status ShorterError(const std::string& url, uint64_t size, uint64_t offset, uint64_t length);

// ---- XML reading (shared with the S3 store) ----

// One element of an XML document as the scanner meets it.
struct XmlEvent {
  enum class Kind { kStart, kEnd, kText };
  Kind kind = Kind::kText;
  std::string_view ns;     // kStart/kEnd: the element's namespace URI ("DAV:"), "" for none
  std::string_view local;  // kStart/kEnd: the element's name without its prefix
  std::string text;        // kText: character data with entities and CDATA decoded
  int depth = 0;           // kStart/kEnd: 1 for the root element
};

// Scans `xml` (UTF-8, well-formed enough) and calls `fn` for every start tag, end tag and run of
// character data, in document order; namespace prefixes are resolved through xmlns declarations.
// Comments, processing instructions and a DOCTYPE without an internal subset are skipped; an empty
// element gives a start and an end. Corruption "bad XML at byte N: ..." for malformed input
// (mismatched tags, bad entity, unterminated markup, nesting deeper than 64), and stops at a
// non-OK status from `fn`. Never reads outside `xml`.
Status ScanXml(std::string_view xml, const std::function<Status(const XmlEvent&)>& fn);

// One entry of a PROPFIND multistatus answer.
struct DavEntry {
  std::string path;  // the href, percent-decoded, scheme and authority removed ("/data/x")
  bool collection = false;
  std::optional<uint64_t> size;  // getcontentlength, when given in a 2xx propstat
};

// Parses a WebDAV multistatus document (elements in the "DAV:" namespace under any prefix).
// Corruption for malformed XML, a response without an href or a bad percent-escape.
Result<std::vector<DavEntry>> ParseDavMultistatus(std::string_view xml);

// Percent-decodes `s` ("%2F" -> "/"). InvalidArgument for a truncated or non-hex escape.
Result<std::string> PercentDecode(std::string_view s);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_WEBDAV_STORE_H_
