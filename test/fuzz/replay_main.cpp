// Runs a fuzz target over files, the way libFuzzer replays a corpus, without libFuzzer: so that the normal
// (gcc) build and the sanitizer build check every seed and every past finding. Arguments: files or folders
// (a missing folder is skipped: a target without findings has none).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

int run_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.eof() && in.fail()) {
    std::fprintf(stderr, "%s: cannot read\n", path.c_str());
    return 1;
  }
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> files;
  for (int a = 1; a < argc; ++a) {
    const std::filesystem::path arg(argv[a]);
    if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg))
        if (entry.is_regular_file()) files.push_back(entry.path());
    } else if (std::filesystem::exists(arg)) {
      files.push_back(arg);
    }
  }
  int errors = 0;
  for (const auto& file : files) errors += run_file(file);
  const int inputs = static_cast<int>(files.size());
  std::printf("replayed %d inputs\n", inputs);
  return errors == 0 && inputs > 0 ? 0 : 1;
}
