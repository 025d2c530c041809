#include "runtime/tokenizer/token_index.h"

#include <algorithm>
#include <bit>
#include <functional>

namespace lmrt {

void TokenIndex::build(const StringTable& texts) {
  // At most 3/4 full, so a probe for a missing text (most look-ups while merging) ends soon.
  const uint64_t capacity = std::bit_ceil(std::max<uint64_t>(16, texts.size() + texts.size() / 3 + 1));
  slots_.assign(capacity, Slot{0, -1});
  mask_ = capacity - 1;
  for (size_t id = 0; id < texts.size(); ++id) {
    const std::string_view text = texts[id];
    if (text.empty()) continue;
    const uint64_t h = std::hash<std::string_view>{}(text);
    const uint32_t tag = static_cast<uint32_t>(h >> 32);
    for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.id < 0) {
        s = Slot{tag, static_cast<int32_t>(id)};
        break;
      }
      if (s.tag == tag && texts[static_cast<size_t>(s.id)] == text) {
        s.id = static_cast<int32_t>(id);  // the later duplicate wins
        break;
      }
    }
  }
}

int32_t TokenIndex::find(std::string_view text, const StringTable& texts) const {
  if (slots_.empty()) return -1;
  const uint64_t h = std::hash<std::string_view>{}(text);
  const uint32_t tag = static_cast<uint32_t>(h >> 32);
  for (uint64_t i = h & mask_;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.id < 0) return -1;
    if (s.tag == tag && texts[static_cast<size_t>(s.id)] == text) return s.id;
  }
}

}  // namespace lmrt
