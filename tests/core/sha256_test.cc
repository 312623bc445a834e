#include "core/sha256.h"

#include <random>
#include <string>

#include <gtest/gtest.h>

namespace cutover {
namespace {

std::string Repeat(char c, size_t n) { return std::string(n, c); }

std::string Unhex(std::string_view hex) {
  auto bytes = HexDecode(hex);
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  return bytes.ok() ? std::string(bytes->begin(), bytes->end()) : std::string();
}

TEST(Sha256Test, NistVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(Repeat('a', 1'000'000)),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, IncrementalMatchesOneShotOverRandomSplits) {
  std::mt19937_64 rng(20261202);
  std::string data(256 * 1024 + 17, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  const Sha256Hash want = Sha256Digest(data);
  Sha256 h;  // one object reused across messages: Final() must start a fresh one
  for (int trial = 0; trial < 50; ++trial) {
    size_t pos = 0;
    while (pos < data.size()) {
      size_t n = std::min<size_t>(data.size() - pos, rng() % (trial % 2 ? 70 : 9000));
      h.Update(data.data() + pos, n);
      pos += n;
    }
    ASSERT_EQ(HexEncode(h.Final()), HexEncode(want)) << "trial " << trial;
  }
}

TEST(Sha256Test, ResetDiscardsAndMoveKeepsState) {
  Sha256 h;
  h.Update("garbage");
  h.Reset();
  h.Update("ab");
  Sha256 moved(std::move(h));
  moved.Update("c");
  EXPECT_EQ(HexEncode(moved.Final()), Sha256Hex("abc"));
  // The moved-from object is usable and empty.
  h.Update("abc");
  EXPECT_EQ(HexEncode(h.Final()), Sha256Hex("abc"));
}

TEST(HmacSha256Test, Rfc4231Vectors) {
  EXPECT_EQ(HexEncode(HmacSha256(Repeat('\x0b', 20), "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(HexEncode(HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(HexEncode(HmacSha256(Repeat('\xaa', 20), Repeat('\xdd', 50))),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  EXPECT_EQ(HexEncode(HmacSha256(Unhex("0102030405060708090a0b0c0d0e0f10111213141516171819"),
                                 Repeat('\xcd', 50))),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  EXPECT_EQ(HexEncode(HmacSha256(Repeat('\xaa', 131),
                                 "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  EXPECT_EQ(HexEncode(HmacSha256(
                Repeat('\xaa', 131),
                "This is a test using a larger than block-size key and a larger than block-size "
                "data. The key needs to be hashed before being used by the HMAC algorithm.")),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

TEST(HmacSha256Test, EmptyKeyAndMessage) {
  EXPECT_EQ(HexEncode(HmacSha256("", "")),
            "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

TEST(HexTest, RoundTripAndErrors) {
  auto d = Sha256FromHex("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD");
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(*d, Sha256Digest("abc"));
  EXPECT_EQ(HexDecode("abc").status().message(), "bad hex: odd length 3");
  EXPECT_EQ(HexDecode("00zz").status().message(), "bad hex: invalid character 'z' at 2");
  EXPECT_EQ(HexDecode("0\n").status().message(), "bad hex: invalid character '\\x0a' at 1");
  EXPECT_EQ(Sha256FromHex("00").status().message(), "bad SHA-256 hex: 2 characters, expected 64");
  EXPECT_EQ(HexDecode("").value().size(), 0u);
}

}  // namespace
}  // namespace cutover
