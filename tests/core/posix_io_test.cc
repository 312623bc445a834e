#include "core/posix_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include <gtest/gtest.h>

#include "tests/harness/test_env.h"

namespace cutover {
namespace {

TEST(PosixIoTest, WriteFullThenPreadFullAndReadSomeRoundTrip) {
  testing::TempDir dir;
  const std::string path = dir.Join("f");
  const std::string data(1 << 20, 'x');
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(WriteFull(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  std::string back(100, '\0');
  EXPECT_EQ(PreadFull(fd, back.data(), back.size(), data.size() - 60), 60);  // short at the end
  EXPECT_EQ(back.substr(0, 60), std::string(60, 'x'));
  EXPECT_EQ(PreadFull(fd, back.data(), back.size(), data.size() + 5), 0);
  ASSERT_EQ(::lseek(fd, 0, SEEK_SET), 0);
  EXPECT_EQ(ReadSome(fd, back.data(), back.size()), 100);
  ::close(fd);
}

TEST(PosixIoTest, ErrorsLeaveErrnoForTheMessage) {
  char c = 0;
  EXPECT_EQ(ReadSome(-1, &c, 1), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(ErrnoMessage("cannot read", "/x/y"), "cannot read /x/y: Bad file descriptor");
  EXPECT_EQ(PreadFull(-1, &c, 1, 0), -1);
  EXPECT_EQ(WriteFull(-1, &c, 1), -1);
  EXPECT_EQ(errno, EBADF);
}

}  // namespace
}  // namespace cutover
