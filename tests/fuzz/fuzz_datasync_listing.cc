// Fuzzes what remote stores answer: the S3 ListObjectsV2 and error XML, the WebDAV PROPFIND
// multistatus and the XML scanner under it. No crash, no read outside the input (ASan), and
// what they accept is sane: S3 keys come from the input, and the scanner never reports an
// element deeper than its limit of 64.
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
  (void)cutover::ParseDavMultistatus(xml);
  (void)cutover::ScanXml(xml, [](const cutover::XmlEvent& e) {
    if (e.kind != cutover::XmlEvent::Kind::kText) {
      FUZZ_CHECK(e.depth >= 1 && e.depth <= 64, "depth out of range");
    }
    return cutover::Status::Ok();
  });
  (void)cutover::PercentDecode(xml);
  return 0;
}
