// The tokenizer's compact tables (StringTable, TokenIndex, BpeMergeTable), and what they are for: a
// large vocabulary loads into a few flat tables, not one heap object per token or merge (issue 15,
// point 8: Qwen2's 151,936 tokens and 151,387 merges were held as GgufValues, std::strings and
// node-based maps, ~80 MB of peak RSS on a 25 MB vocabulary).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "alloc_counter.h"
#include "runtime/model/gguf_file.h"
#include "runtime/tokenizer/bpe_merge_table.h"
#include "runtime/tokenizer/token_index.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/util/string_table.h"
#include "test_support.h"

namespace lmrt {
namespace {

TEST(StringTable, KeepsEveryStringIncludingEmptyOnes) {
  StringTable t = {"a", "", "\xE2\x96\x81the", "a"};
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0], "a");
  EXPECT_EQ(t[1], "");
  EXPECT_EQ(t[2], "\xE2\x96\x81the");
  EXPECT_EQ(t[3], "a");
  t.clear();
  EXPECT_TRUE(t.empty());
}

TEST(TokenIndex, FindsTextsAndTheLastOfDuplicates) {
  StringTable texts = {"<unk>", "a", "", "ab", "a", "abc"};
  TokenIndex index;
  index.build(texts);
  EXPECT_EQ(index.find("<unk>", texts), 0);
  EXPECT_EQ(index.find("a", texts), 4);  // a duplicate text maps to its last id, as in llama.cpp
  EXPECT_EQ(index.find("ab", texts), 3);
  EXPECT_EQ(index.find("abc", texts), 5);
  EXPECT_EQ(index.find("", texts), -1);  // empty texts are never matched
  EXPECT_EQ(index.find("abcd", texts), -1);
  EXPECT_EQ(index.find("b", texts), -1);
  EXPECT_EQ(TokenIndex().find("a", texts), -1);  // not built
}

TEST(BpeMergeTable, KeepsTheFirstRankOfARepeatedPair) {
  BpeMergeTable merges;
  merges.reserve(3);
  merges.add(1, 2, {0, 10});
  merges.add(2, 1, {1, 11});
  merges.add(1, 2, {2, 12});
  ASSERT_NE(merges.find(1, 2), nullptr);
  EXPECT_EQ(merges.find(1, 2)->rank, 0);
  EXPECT_EQ(merges.find(1, 2)->result, 10);
  ASSERT_NE(merges.find(2, 1), nullptr);
  EXPECT_EQ(merges.find(2, 1)->result, 11);
  EXPECT_EQ(merges.find(1, 1), nullptr);
  EXPECT_EQ(merges.find(-1, 2), nullptr);
  EXPECT_EQ(BpeMergeTable().find(1, 2), nullptr);
}

// Opening the file and building the tokenizer of Qwen2's vocabulary allocates a few tables, not
// something per token or merge: the metadata arrays stay in the mapping and the texts go to one pool.
TEST(VocabMemory, Qwen2LoadsWithoutAnAllocationPerTokenOrMerge) {
  const std::string path = test::shared_dir() + "/vocab/qwen2.gguf";
  std::unique_ptr<GgufFile> gguf;
  std::unique_ptr<Tokenizer> tok;
  long allocations = 0;
  {
    test::AllocationCounter counter;
    ASSERT_TRUE(GgufFile::open(path, true, &gguf).ok());
    ASSERT_TRUE(Tokenizer::from_gguf(*gguf, &tok).ok());
    allocations = counter.count();
  }
  const GgufValue* tokens = gguf->find("tokenizer.ggml.tokens");
  const GgufValue* merges = gguf->find("tokenizer.ggml.merges");
  ASSERT_NE(tokens, nullptr);
  ASSERT_NE(merges, nullptr);
  ASSERT_EQ(tok->n_vocab(), 151936);
  EXPECT_EQ(merges->size(), 151387u);
  EXPECT_LT(allocations, tok->n_vocab() / 100) << "allocations while loading " << path;
  // The tables read what the file holds.
  for (int32_t id : {0, 198, 151643, 151935}) EXPECT_EQ(tok->token_text(id), tokens->string_item(id)) << id;
  EXPECT_EQ(tok->token_text(151643), "<|endoftext|>");
}

}  // namespace
}  // namespace lmrt
