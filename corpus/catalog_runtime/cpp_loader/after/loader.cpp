// Inference server entry point: loads a TorchScript model (see tools/export.py).
// Note: torch::jit::load below expects a file written by torch.jit.save.
#include <torch/script.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace server {

class Predictor {
 public:
  explicit Predictor(const std::string& path) : model_(torch::jit::load(path)) {
    model_.eval();
  }

  at::Tensor predict(const at::Tensor& features) {
    std::vector<torch::jit::IValue> inputs;
    inputs.emplace_back(features);
    c10::IValue out = model_.forward(inputs);
    return out.toTuple()->elements()[0].toTensor();
  }

 private:
  torch::jit::script::Module model_;
};

}  // namespace server

int main(int argc, const char* argv[]) {
  if (argc != 2) {
    std::cerr << "usage: loader <model.pt>  (a torch::jit::save file)\n";
    return 1;
  }
  server::Predictor predictor(argv[1]);
  at::Tensor y = predictor.predict(torch::ones({1, 8}));
  std::cout << y << "\n";
  return 0;
}
