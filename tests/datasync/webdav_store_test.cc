// The XML scanner and the WebDAV multistatus parser on real-shaped and malformed documents.
#include "datasync/webdav_store.h"

#include <random>

#include <gtest/gtest.h>

namespace cutover {
namespace {

// The shape nginx's dav-ext module answers a Depth: 1 PROPFIND with.
constexpr char kNginxMultistatus[] = R"(<?xml version="1.0" encoding="utf-8" ?>
<D:multistatus xmlns:D="DAV:">
<D:response>
<D:href>/data/chunks/</D:href>
<D:propstat>
<D:prop>
<D:resourcetype><D:collection/></D:resourcetype>
</D:prop>
<D:status>HTTP/1.1 200 OK</D:status>
</D:propstat>
</D:response>
<D:response>
<D:href>/data/chunks/ab/</D:href>
<D:propstat>
<D:prop>
<D:resourcetype><D:collection/></D:resourcetype>
</D:prop>
<D:status>HTTP/1.1 200 OK</D:status>
</D:propstat>
</D:response>
<D:response>
<D:href>/data/chunks/a%20b%2Bc</D:href>
<D:propstat>
<D:prop>
<D:resourcetype></D:resourcetype>
<D:getcontentlength>1048576</D:getcontentlength>
</D:prop>
<D:status>HTTP/1.1 200 OK</D:status>
</D:propstat>
</D:response>
</D:multistatus>
)";

// Apache mod_dav style: absolute hrefs, lp1 prefix, a 404 propstat for a missing property.
constexpr char kApacheMultistatus[] = R"(<?xml version="1.0" encoding="utf-8"?>
<D:multistatus xmlns:D="DAV:" xmlns:ns0="DAV:">
<D:response xmlns:lp1="DAV:" xmlns:lp2="http://apache.org/dav/props/">
<D:href>https://dav.example.com:8443/store/config</D:href>
<D:propstat>
<D:prop>
<lp1:resourcetype/>
<lp1:getcontentlength>   42 </lp1:getcontentlength>
</D:prop>
<D:status>HTTP/1.1 200 OK</D:status>
</D:propstat>
<D:propstat>
<D:prop><lp1:getcontentlength>7</lp1:getcontentlength><ns0:quota/></D:prop>
<D:status>HTTP/1.1 404 Not Found</D:status>
</D:propstat>
</D:response>
<D:response>
<D:href>http://h/store/dir/</D:href>
<D:propstat><D:prop><D:resourcetype><D:collection/></D:resourcetype></D:prop>
<D:status>HTTP/1.1 200 OK</D:status></D:propstat>
</D:response>
</D:multistatus>)";

TEST(DavMultistatusTest, ParsesNginxShape) {
  auto r = ParseDavMultistatus(kNginxMultistatus);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].path, "/data/chunks/");
  EXPECT_TRUE((*r)[0].collection);
  EXPECT_FALSE((*r)[0].size.has_value());
  EXPECT_EQ((*r)[1].path, "/data/chunks/ab/");
  EXPECT_EQ((*r)[2].path, "/data/chunks/a b+c");
  EXPECT_FALSE((*r)[2].collection);
  EXPECT_EQ((*r)[2].size, 1048576u);
}

TEST(DavMultistatusTest, ParsesAbsoluteHrefsOtherPrefixesAndSkips404Propstats) {
  auto r = ParseDavMultistatus(kApacheMultistatus);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].path, "/store/config");
  EXPECT_FALSE((*r)[0].collection);
  EXPECT_EQ((*r)[0].size, 42u);
  EXPECT_EQ((*r)[1].path, "/store/dir/");
  EXPECT_TRUE((*r)[1].collection);
}

TEST(DavMultistatusTest, DefaultNamespaceAndForeignElements) {
  constexpr char kXml[] =
      "<multistatus xmlns='DAV:' xmlns:x='urn:x'><response><href>/a/b</href>"
      "<x:href>/wrong</x:href><propstat><prop><getcontentlength>5</getcontentlength>"
      "<x:collection/></prop></propstat></response></multistatus>";
  auto r = ParseDavMultistatus(kXml);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].path, "/a/b");
  EXPECT_FALSE((*r)[0].collection);  // x:collection is not DAV:collection
  EXPECT_EQ((*r)[0].size, 5u);
}

Status ScanOnly(std::string_view xml) {
  return ScanXml(xml, [](const XmlEvent&) { return Status::Ok(); });
}

TEST(ScanXmlTest, MalformedXmlIsCorruptionWithTheOffset) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "bad XML at byte 0: no root element"},
      {"<a>", "bad XML at byte 3: unexpected end inside <a>"},
      {"<a></b>", "bad XML at byte 3: end tag </b> does not match <a>"},
      {"</a>", "bad XML at byte 0: end tag </a> does not match any open element"},
      {"<D:a>", "bad XML at byte 5: undeclared namespace prefix in <D:a>"},
      {"<:a/>", "bad XML at byte 5: bad qualified name <:a>"},
      {"<a>&bogus;</a>", "bad XML at byte 3: unknown entity &bogus;"},
      {"<a>&amp</a>", "bad XML at byte 3: bad entity reference"},
      {"<a>&#0;</a>", "bad XML at byte 3: bad character reference &#0;"},
      {"<a>&#xD800;</a>", "bad XML at byte 3: bad character reference &#xD800;"},
      {"<a x=1></a>", "bad XML at byte 5: expected a quoted value for x"},
      {"<a x='1></a>", "bad XML at byte 8: bad value for x"},
      {"<a x='1'y='2'/>", "bad XML at byte 8: expected a space before an attribute"},
      {"<a xmlns:p=''/>", "bad XML at byte 13: bad namespace declaration xmlns:p"},
      {"<a", "bad XML at byte 2: unterminated start tag <a>"},
      {"<a><!-- x </a>", "bad XML at byte 3: unterminated comment"},
      {"<a><![CDATA[x</a>", "bad XML at byte 3: unterminated CDATA section"},
      {"<?xml ", "bad XML at byte 0: unterminated processing instruction"},
      {"<!DOCTYPE a [<!ENTITY e 'x'>]><a/>", "bad XML at byte 0: DOCTYPE with an internal subset"},
      {"<a/><b/>", "bad XML at byte 4: a second root element"},
      {"<a/>junk", "bad XML at byte 8: text outside the root element"},
      {"< a/>", "bad XML at byte 1: expected a name"},
  };
  for (const auto& [xml, message] : cases) {
    Status s = ScanOnly(xml);
    EXPECT_EQ(s.code(), Code::kCorruption) << xml;
    EXPECT_EQ(s.message(), message) << xml;
  }
}

TEST(DavMultistatusTest, MalformedDocumentsAreCorruption) {
  const std::pair<const char*, const char*> cases[] = {
      {"<D:multistatus xmlns:D=\"DAV:\"></D:response>",
       "bad XML at byte 30: end tag </D:response> does not match <D:multistatus>"},
      {"<D:multistatus>", "bad XML at byte 15: undeclared namespace prefix in <D:multistatus>"},
      {"<ms xmlns='DAV:'/>", "not a WebDAV multistatus (root <ms>)"},
      {"<multistatus xmlns='urn:other'/>", "not a WebDAV multistatus (root <multistatus>)"},
      {"<multistatus xmlns='DAV:'><response><propstat/></response></multistatus>",
       "a WebDAV response without an href"},
      {"<multistatus xmlns='DAV:'><response><href>/a%zz</href></response></multistatus>",
       "WebDAV href: bad percent-escape at byte 2 of \"/a%zz\""},
  };
  for (const auto& [xml, message] : cases) {
    auto r = ParseDavMultistatus(xml);
    ASSERT_FALSE(r.ok()) << xml;
    EXPECT_EQ(r.status().code(), Code::kCorruption) << xml;
    EXPECT_EQ(r.status().message(), message) << xml;
  }
}

TEST(ScanXmlTest, DeepNestingIsRefused) {
  std::string xml;
  for (int i = 0; i < 100; ++i) xml += "<a>";
  EXPECT_EQ(ScanOnly(xml).message(), "bad XML at byte 192: nesting too deep");
  std::string ok;
  for (int i = 0; i < 64; ++i) ok += "<a>";
  for (int i = 0; i < 64; ++i) ok += "</a>";
  EXPECT_TRUE(ScanOnly(ok).ok());
}

TEST(ScanXmlTest, DecodesEntitiesCdataAndAttributes) {
  std::string text;
  std::vector<std::string> tags;
  Status s = ScanXml(
      "<?xml version='1.0'?><!-- c --><!DOCTYPE r><r a=\"&lt;&quot;\" b='x'>"
      "1 &amp; 2 &#x41;&#66;&#x20AC;<![CDATA[<raw>&amp;]]><e/></r>",
      [&](const XmlEvent& ev) {
        if (ev.kind == XmlEvent::Kind::kText) text += ev.text;
        if (ev.kind == XmlEvent::Kind::kStart) tags.push_back("+" + std::string(ev.local));
        if (ev.kind == XmlEvent::Kind::kEnd) tags.push_back("-" + std::string(ev.local));
        return Status::Ok();
      });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(text, "1 & 2 AB\xE2\x82\xAC<raw>&amp;");
  EXPECT_EQ(tags, (std::vector<std::string>{"+r", "+e", "-e", "-r"}));
}

TEST(ScanXmlTest, CallbackErrorStopsTheScan) {
  int starts = 0;
  Status s = ScanXml("<a><b/><c/></a>", [&](const XmlEvent& ev) {
    if (ev.kind == XmlEvent::Kind::kStart && ++starts == 2) return Status::Aborted("stop");
    return Status::Ok();
  });
  EXPECT_EQ(s.code(), Code::kAborted);
  EXPECT_EQ(starts, 2);
}

// Truncations and random byte flips of real documents: an answer or a Corruption, never a crash
// (run under ASan/UBSan in CI).
TEST(DavMultistatusTest, TruncatedAndMutatedInputsNeverCrash) {
  std::string base = kApacheMultistatus;
  for (size_t n = 0; n <= base.size(); ++n) {
    auto r = ParseDavMultistatus(std::string_view(base).substr(0, n));
    if (n < base.size() - 1) {
      EXPECT_FALSE(r.ok()) << n;
    }
  }
  std::mt19937 rng(1);
  const char kBytes[] = "<>/&;:='\"#x% \0\xff";
  int ok = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string m = i % 2 ? base : std::string(kNginxMultistatus);
    for (int k = 0; k < 3; ++k) {
      m[rng() % m.size()] = kBytes[rng() % (sizeof(kBytes) - 1)];
    }
    ok += ParseDavMultistatus(m).ok();
  }
  EXPECT_LT(ok, 3000);
}

TEST(PercentDecodeTest, DecodesAndRejects) {
  EXPECT_EQ(PercentDecode("/a%2Fb%7e%20").value_or(""), "/a/b~ ");
  EXPECT_EQ(PercentDecode("%4").status().message(), "bad percent-escape at byte 0 of \"%4\"");
  EXPECT_EQ(PercentDecode("x%g0").status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace cutover
