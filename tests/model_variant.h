// Copies of a shared model with one thing changed (a metadata value, a tensor's shape), written with
// GgufWriter, for tests of how the loader and the tools describe a bad file.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/model/gguf_file.h"
#include "tools/gguf_writer.h"

namespace lmrt::test {

// kv_edit may write a metadata value itself (returning true) instead of the original; shape_edit
// may change a tensor's dimensions.
using KvEdit = std::function<bool(const GgufKv&, GgufWriter*)>;
using ShapeEdit = std::function<void(std::string_view name, std::vector<uint64_t>* ne)>;
inline const KvEdit kKeepKvs = [](const GgufKv&, GgufWriter*) { return false; };
inline const ShapeEdit kKeepShapes = [](std::string_view, std::vector<uint64_t>*) {};

// Writes the variant of ../shared/models/<model> under the test temp dir as file_name and returns
// its path ("" after a gtest failure when it could not be written).
std::string write_model_variant(const std::string& model, const std::string& file_name, const KvEdit& kv_edit,
                                const ShapeEdit& shape_edit);

}  // namespace lmrt::test
