#include "runtime/model/gguf_file.h"

#include <gtest/gtest.h>

#include "test_support.h"

namespace lmrt {
namespace {

TEST(GgufFile, ReadsStories260KHeaderAndTensors) {
  std::unique_ptr<GgufFile> g;
  Status s = GgufFile::open(test::model_path("stories260K.gguf"), true, &g);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(g->version(), 3u);
  EXPECT_EQ(g->tensors().size(), 48u);
  EXPECT_EQ(g->get_string("general.architecture").value_or(""), "llama");
  EXPECT_EQ(g->get_int("llama.embedding_length").value_or(0), 64);
  const GgufValue* tokens = g->find("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  ASSERT_EQ(tokens->type, GgufValueType::array);
  ASSERT_EQ(tokens->items.size(), 512u);
  EXPECT_EQ(tokens->items[1].str, "<s>");
  const GgufTensorInfo* ffn_down = g->find_tensor("blk.0.ffn_down.weight");
  ASSERT_NE(ffn_down, nullptr);
  EXPECT_EQ(ffn_down->ne[0], 172u);
  EXPECT_EQ(ffn_down->ne[1], 64u);
  EXPECT_EQ(ffn_down->n_bytes, 172u * 64u * 4u);
}

}  // namespace
}  // namespace lmrt
