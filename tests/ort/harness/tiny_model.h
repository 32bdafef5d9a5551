// A small ONNX model written as protobuf bytes by hand (no onnx package needed): the
// two-layer block Y = MatMul(Relu(MatMul(X, W1)), W2) + B with a symbolic batch dimension.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace memarena::ort::testing {

struct TinyModel {
  std::string bytes;             // a serialized ModelProto (IR 8, opset 13)
  std::size_t width = 0;         // X is [batch, width] float, and so is Y
  std::size_t matrix_bytes = 0;  // bytes of the two weight matrices W1 and W2
};

// `width` x `width` weights filled from `seed`, so two seeds give two different models.
TinyModel BuildTinyModel(std::size_t width, std::uint32_t seed);

// A deterministic input of `batch` rows for a model of `width` columns.
std::vector<float> TinyModelInput(std::int64_t batch, std::size_t width);

}  // namespace memarena::ort::testing
