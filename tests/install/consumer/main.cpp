// Uses the installed headers and library: (1..4) · (1..4) must be 30.
#include <ignis/ignis.h>

#include <cstdio>

int main() {
  ignis::Tensor x = ignis::arange(1, 5, 1, ignis::kFloat32);
  const double dot = (x * x).sum().item<double>();
  std::printf("consumer: sum of squares = %g (ignis %s)\n", dot, ignis::version());
  return dot == 30.0 ? 0 : 1;
}
