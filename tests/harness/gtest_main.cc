// The main() of every test binary.
#include <csignal>

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  // Tests talk to servers that may close connections; a write to a closed socket must be an error
  // return, not a signal that ends the binary.
  std::signal(SIGPIPE, SIG_IGN);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
