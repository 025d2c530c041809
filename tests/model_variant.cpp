#include "model_variant.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "test_support.h"

namespace lmrt::test {

std::string write_model_variant(const std::string& model, const std::string& file_name, const KvEdit& kv_edit,
                                const ShapeEdit& shape_edit) {
  std::unique_ptr<GgufFile> in;
  Status s = GgufFile::open(model_path(model), true, &in);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return "";
  GgufWriter w;
  EXPECT_TRUE(w.set_alignment(in->alignment()).ok());
  for (const GgufKv& kv : in->metadata())
    if (!kv_edit(kv, &w)) w.add_value(std::string(kv.key), kv.value);
  for (const GgufTensorInfo& t : in->tensors()) {
    std::vector<uint64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
    shape_edit(t.name, &ne);
    EXPECT_TRUE(w.add_tensor(std::string(t.name), ne, t.type).ok());
  }
  const std::string path = write_temp_file(file_name, "");
  ::unlink(path.c_str());
  s = w.write(path, [&](size_t i, uint8_t* data, uint64_t bytes) {
    std::memcpy(data, in->tensors()[i].data, bytes);
    return Status::Ok();
  });
  EXPECT_TRUE(s.ok()) << s.message();
  return s.ok() ? path : "";
}

}  // namespace lmrt::test
