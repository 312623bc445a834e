// FUZZ_CHECK(cond, detail): the invariant check of fuzz targets. On failure it prints the
// condition and `detail` and aborts, which libFuzzer and the corpus driver both report as a crash.
#ifndef CUTOVER_TESTS_FUZZ_FUZZ_CHECK_H_
#define CUTOVER_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>
#include <string>

#define FUZZ_CHECK(cond, detail)                                                             \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "FUZZ_CHECK failed: %s (%s:%d): %s\n", #cond, __FILE__, __LINE__, \
                   std::string(detail).c_str());                                             \
      std::abort();                                                                          \
    }                                                                                        \
  } while (0)

#endif  // CUTOVER_TESTS_FUZZ_FUZZ_CHECK_H_
