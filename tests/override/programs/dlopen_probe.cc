// dlopen of a library that allocates: blocks cross the library boundary both ways, and the
// library is closed and opened again.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODULE.so\n", argv[0]);
    return 2;
  }
  for (int round = 0; round < 2; ++round) {
    void* module = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (module == nullptr) {
      std::fprintf(stderr, "dlopen: %s\n", dlerror());
      return 1;
    }
    auto greeting = reinterpret_cast<char* (*)(const char*)>(dlsym(module, "ModuleGreeting"));
    auto make_vector =
        reinterpret_cast<std::vector<int>* (*)(int)>(dlsym(module, "ModuleMakeVector"));
    auto consume = reinterpret_cast<long (*)(char*, std::size_t)>(dlsym(module, "ModuleConsume"));
    if (greeting == nullptr || make_vector == nullptr || consume == nullptr) return 1;
    char* text = greeting("dlopen");
    std::vector<int>* squares = make_vector(1000);
    char* block = static_cast<char*>(std::malloc(100000));
    std::memset(block, 1, 100000);
    const long consumed = consume(block, 100000);
    std::printf("round %d: %s squares[999]=%d consumed=%ld\n", round, text, (*squares)[999],
                consumed);
    std::free(text);
    delete squares;
    dlclose(module);
  }
  return 0;
}
