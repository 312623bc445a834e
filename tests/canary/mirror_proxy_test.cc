// The mirror proxy's option checks and URL joining; the proxy itself is exercised on loopback by
// mirror_itest.cc.
#include "canary/mirror_proxy.h"

#include <string>

#include <gtest/gtest.h>

namespace cutover::canary {
namespace {

MirrorProxyOptions Valid() {
  MirrorProxyOptions o;
  o.primary = "http://127.0.0.1:8001";
  o.secondary = "http://127.0.0.1:8002/";
  o.candidate = "https://candidate.internal/api";
  return o;
}

std::string Error(const MirrorProxyOptions& o) { return ValidateMirrorProxyOptions(o).message(); }

TEST(MirrorProxyOptions, DefaultsWithThreeUrlsAreValid) {
  EXPECT_TRUE(ValidateMirrorProxyOptions(Valid()).ok());
  MirrorProxyOptions o = Valid();
  EXPECT_EQ(o.listen, "127.0.0.1:8480");
  EXPECT_EQ(o.methods, (std::vector<std::string>{"GET", "HEAD"}));
  for (const char* listen : {"127.0.0.1:0", "localhost:9000", "[::1]:9000", "0.0.0.0:80"}) {
    o.listen = listen;
    EXPECT_TRUE(ValidateMirrorProxyOptions(o).ok()) << listen;
  }
}

TEST(MirrorProxyOptions, UrlErrorsNameTheFlag) {
  MirrorProxyOptions o = Valid();
  o.candidate = "localhost:8000";
  EXPECT_EQ(Error(o), "mirror: --candidate 'localhost:8000': expected an http:// or https:// URL");
  o = Valid();
  o.primary = "http:///x";
  EXPECT_EQ(Error(o), "mirror: --primary 'http:///x': no host");
  o = Valid();
  o.secondary = "http://h:1/v1?model=a";
  EXPECT_EQ(Error(o),
            "mirror: --secondary 'http://h:1/v1?model=a': a base URL takes no query or "
            "fragment");
  o = Valid();
  o.primary = "";
  EXPECT_EQ(Error(o), "mirror: --primary '': expected an http:// or https:// URL");
  EXPECT_EQ(ValidateMirrorProxyOptions(o).code(), Code::kInvalidArgument);
}

TEST(MirrorProxyOptions, AUrlPasswordStaysOutOfTheMessage) {
  MirrorProxyOptions o = Valid();
  o.candidate = "ftp://user:hunter2@host/";
  std::string e = Error(o);
  EXPECT_EQ(e.find("hunter2"), std::string::npos) << e;
}

TEST(MirrorProxyOptions, ListenErrors) {
  MirrorProxyOptions o = Valid();
  for (const char* listen : {"8080", ":8080", "127.0.0.1:", "example.com:80", "127.0.0.1:65536",
                             "127.0.0.1:http", "127.0.0.1:123456"}) {
    o.listen = listen;
    EXPECT_EQ(Error(o), std::string("mirror: --listen '") + listen +
                            "': expected HOST:PORT (an IP address or localhost)");
  }
}

TEST(MirrorProxyOptions, MethodAndSizeErrors) {
  MirrorProxyOptions o = Valid();
  o.methods = {"GET", "GE T"};
  EXPECT_EQ(Error(o), "mirror: --methods 'GE T': not an HTTP method");
  o = Valid();
  o.methods = {""};
  EXPECT_EQ(Error(o), "mirror: --methods '': not an HTTP method");
  o = Valid();
  o.queue_capacity = 0;
  EXPECT_EQ(Error(o), "mirror: --queue must be >= 1");
  o = Valid();
  o.workers = 0;
  EXPECT_EQ(Error(o), "mirror: --workers must be >= 1");
  o = Valid();
  o.compare.rel_tol = -1;
  EXPECT_EQ(Error(o), "mirror: --rel-tol must be a finite number >= 0, got -1");
}

TEST(MirrorProxy, JoinsABaseUrlAndARequestTarget) {
  EXPECT_EQ(JoinUpstreamUrl("http://h:1", "/v1/x?y=1"), "http://h:1/v1/x?y=1");
  EXPECT_EQ(JoinUpstreamUrl("http://h:1/", "/v1"), "http://h:1/v1");
  EXPECT_EQ(JoinUpstreamUrl("http://h:1/api//", "/v1"), "http://h:1/api/v1");
  EXPECT_EQ(JoinUpstreamUrl("http://h:1/api", "/"), "http://h:1/api/");
}

TEST(MirrorProxy, StartRefusesBadOptionsAndAnAddressInUse) {
  MirrorProxyOptions o = Valid();
  o.listen = "nope";
  MirrorProxy bad(o);
  Status s = bad.Start();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);

  o = Valid();
  o.listen = "127.0.0.1:0";
  MirrorProxy first(o);
  ASSERT_TRUE(first.Start().ok());
  o.listen = "127.0.0.1:" + std::to_string(first.port());
  MirrorProxy second(o);
  s = second.Start();
  EXPECT_EQ(s.code(), Code::kUnavailable);
  EXPECT_EQ(s.message(), "mirror: cannot listen on " + o.listen + ": Address already in use");
  first.Stop();
}

}  // namespace
}  // namespace cutover::canary
