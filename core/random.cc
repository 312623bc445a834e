#include "core/random.h"

#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <span>
#include <vector>

#include "core/sha256.h"

namespace cutover {

void RandomBytes(void* out, size_t n) {
  auto* buf = static_cast<unsigned char*>(out);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::getrandom(buf + got, n - got, 0);
    if (r > 0) {
      got += static_cast<size_t>(r);
    } else if (errno != EINTR) {
      uint64_t v = static_cast<uint64_t>(
                       std::chrono::system_clock::now().time_since_epoch().count()) ^
                   (static_cast<uint64_t>(::getpid()) << 40);
      for (; got < n; ++got, v = v * 6364136223846793005u + 1442695040888963407u) {
        buf[got] = static_cast<unsigned char>(v >> 56);
      }
    }
  }
}

std::string RandomHex(size_t bytes) {
  std::vector<uint8_t> buf(bytes);
  RandomBytes(buf.data(), bytes);
  return HexEncode(std::span<const uint8_t>(buf.data(), bytes));
}

uint64_t RandomSeed() {
  uint64_t s = 0;
  RandomBytes(&s, sizeof s);
  return s;
}

}  // namespace cutover
