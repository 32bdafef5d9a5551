// A library loaded with dlopen that allocates: it hands out blocks the program frees and
// frees blocks the program allocated, through malloc and operator new.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" {

char* ModuleGreeting(const char* name) {
  std::vector<std::string> parts = {"hello", ",", " ", name, "!"};
  std::string joined;
  for (const std::string& p : parts) joined += p;
  return strdup(joined.c_str());
}

std::vector<int>* ModuleMakeVector(int n) {
  auto* v = new std::vector<int>();
  for (int i = 0; i < n; ++i) v->push_back(i * i);
  return v;
}

long ModuleConsume(char* block, std::size_t size) {
  long sum = 0;
  for (std::size_t i = 0; i < size; ++i) sum += block[i];
  std::free(block);
  return sum;
}

}  // extern "C"
