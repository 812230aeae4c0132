#pragma once
// The data the measuring tools all-reduce, and its check: small integers (exact in bf16, fp16 and
// fp32, and so are their sums over up to 64 ranks), different on every rank and element, so a wrong
// slot, a missed peer or a stale round shows up as a wrong element.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace symmem::bench {

// Element bytes: 2 (bf16 when `bf16`, else fp16) or 4 (fp32).
struct ElementFormat {
  size_t bytes = 2;
  bool bf16 = true;
};

// Bits of `value` in the format (round to nearest even for bf16; fp16 exact for the small integers used).
uint32_t encodeElement(float value, ElementFormat format);

// Input element i of `rank`: an integer in [-8, 8].
float inputValue(int rank, size_t i);

// `count` elements of rank's input, packed in the format.
std::vector<char> makeInput(int rank, size_t count, ElementFormat format);

// Elements of an all-reduce (sum over nRanks ranks) result that differ from the exact sum (an fp32
// zero sum may come back as -0.0).
long long countWrongSum(const std::vector<char>& result, size_t count, int nRanks, ElementFormat format);

}  // namespace symmem::bench
