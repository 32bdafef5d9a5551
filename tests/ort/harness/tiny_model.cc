// The protobuf wire format of the few ONNX messages TinyModel needs (field numbers from
// onnx/onnx.proto): ModelProto, GraphProto, NodeProto, TensorProto, ValueInfoProto.
#include "tiny_model.h"

#include <cstring>

namespace memarena::ort::testing {
namespace {

// One protobuf message under construction.
class Message {
 public:
  Message& Varint(int field, std::uint64_t value) {
    Key(field, 0);
    PutVarint(value);
    return *this;
  }
  Message& Bytes(int field, const std::string& value) {
    Key(field, 2);
    PutVarint(value.size());
    out_ += value;
    return *this;
  }
  Message& Sub(int field, const Message& message) { return Bytes(field, message.out_); }
  const std::string& str() const { return out_; }

 private:
  void Key(int field, int wire_type) {
    PutVarint((static_cast<std::uint64_t>(field) << 3) | wire_type);
  }
  void PutVarint(std::uint64_t value) {
    while (value >= 0x80) {
      out_ += static_cast<char>((value & 0x7f) | 0x80);
      value >>= 7;
    }
    out_ += static_cast<char>(value);
  }
  std::string out_;
};

constexpr int kFloat = 1;  // TensorProto.DataType.FLOAT

Message Node(const std::string& op, const std::string& name, std::vector<std::string> inputs,
             const std::string& output) {
  Message node;
  for (const auto& input : inputs) node.Bytes(1, input);
  node.Bytes(2, output).Bytes(3, name).Bytes(4, op);
  return node;
}

Message Initializer(const std::string& name, const std::vector<std::int64_t>& dims,
                    const std::vector<float>& values) {
  Message tensor;
  for (std::int64_t d : dims) tensor.Varint(1, static_cast<std::uint64_t>(d));
  std::string raw(values.size() * sizeof(float), '\0');
  std::memcpy(raw.data(), values.data(), raw.size());  // raw_data is little endian, as is x86
  tensor.Varint(2, kFloat).Bytes(8, name).Bytes(9, raw);
  return tensor;
}

// A float tensor [batch, width] whose first dimension is the symbol "batch".
Message BatchByWidth(const std::string& name, std::size_t width) {
  Message shape;
  shape.Sub(1, Message().Bytes(2, "batch")).Sub(1, Message().Varint(1, width));
  Message tensor_type;
  tensor_type.Varint(1, kFloat).Sub(2, shape);
  Message type;
  type.Sub(1, tensor_type);
  Message value_info;
  value_info.Bytes(1, name).Sub(2, type);
  return value_info;
}

std::vector<float> Weights(std::size_t count, std::uint32_t seed) {
  std::vector<float> values(count);
  std::uint32_t state = seed * 2654435761u + 1;
  for (float& v : values) {
    state = state * 1664525u + 1013904223u;  // an LCG: the same weights on every machine
    v = static_cast<float>(static_cast<int>(state >> 24) - 128) / 1024.0f;
  }
  return values;
}

}  // namespace

TinyModel BuildTinyModel(std::size_t width, std::uint32_t seed) {
  const auto w = static_cast<std::int64_t>(width);
  Message graph;
  graph.Sub(1, Node("MatMul", "matmul1", {"X", "W1"}, "H0"))
      .Sub(1, Node("Relu", "relu", {"H0"}, "H1"))
      .Sub(1, Node("MatMul", "matmul2", {"H1", "W2"}, "H2"))
      .Sub(1, Node("Add", "add", {"H2", "B"}, "Y"))
      .Bytes(2, "memarena_tiny")
      .Sub(5, Initializer("W1", {w, w}, Weights(width * width, seed)))
      .Sub(5, Initializer("W2", {w, w}, Weights(width * width, seed + 1)))
      .Sub(5, Initializer("B", {w}, Weights(width, seed + 2)))
      .Sub(11, BatchByWidth("X", width))
      .Sub(12, BatchByWidth("Y", width));
  Message opset;
  opset.Bytes(1, "").Varint(2, 13);
  Message model;
  model.Varint(1, 8).Bytes(2, "memarena-tests").Sub(7, graph).Sub(8, opset);
  return TinyModel{model.str(), width, 2 * width * width * sizeof(float)};
}

std::vector<float> TinyModelInput(std::int64_t batch, std::size_t width) {
  std::vector<float> input(static_cast<std::size_t>(batch) * width);
  for (std::size_t i = 0; i < input.size(); ++i) {
    input[i] = static_cast<float>(static_cast<int>(i % 17) - 8) / 8.0f;
  }
  return input;
}

}  // namespace memarena::ort::testing
