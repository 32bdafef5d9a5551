// A two-level logic minimizer, one thread: covers of cubes are expanded, made irredundant
// and cleaned of contained cubes, with every containment question answered by a recursive
// tautology check on cofactored copies of the cover (the method of espresso-style tools).
// A cube is a small bit set (8-byte header plus 1-3 words: 16-32 B); a cover is a small
// struct with an array of cube pointers grown by realloc. Cofactors are built and freed at
// every level of the recursion, so the program allocates and frees small objects of a few
// sizes in deep, short-lived bursts beside the long-lived covers being minimized.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "workload.h"

namespace {

// Two bits per variable: 01 = must be 0, 10 = must be 1, 11 = either, 00 = empty cube.
struct Cube {
  std::uint32_t words;
  std::uint32_t vars;
  std::uint64_t bits[];
};

struct Cover {
  Cube** cubes;
  std::uint32_t count;
  std::uint32_t capacity;
};

constexpr std::uint64_t kLowBits = 0x5555555555555555ull;  // bit 0 of every variable

Cube* NewCube(std::uint32_t vars) {
  const std::uint32_t words = (vars + 31) / 32;
  auto* c = static_cast<Cube*>(std::malloc(sizeof(Cube) + words * sizeof(std::uint64_t)));
  c->words = words;
  c->vars = vars;
  return c;
}

// Every variable "either", padding bits included (so containment ignores them).
Cube* Universe(std::uint32_t vars) {
  Cube* c = NewCube(vars);
  for (std::uint32_t w = 0; w < c->words; ++w) c->bits[w] = ~0ull;
  return c;
}

Cube* CopyCube(const Cube* c) {
  Cube* r = NewCube(c->vars);
  std::memcpy(r->bits, c->bits, c->words * sizeof(std::uint64_t));
  return r;
}

unsigned Field(const Cube* c, std::uint32_t v) { return (c->bits[v / 32] >> (2 * (v % 32))) & 3u; }

void SetField(Cube* c, std::uint32_t v, unsigned value) {
  const unsigned shift = 2 * (v % 32);
  c->bits[v / 32] = (c->bits[v / 32] & ~(3ull << shift)) | (std::uint64_t{value} << shift);
}

bool Contains(const Cube* a, const Cube* b) {
  for (std::uint32_t w = 0; w < a->words; ++w) {
    if ((a->bits[w] & b->bits[w]) != b->bits[w]) return false;
  }
  return true;
}

// True when a and b share a point: no variable where their fields have no bit in common.
bool Intersects(const Cube* a, const Cube* b) {
  for (std::uint32_t w = 0; w < a->words; ++w) {
    const std::uint64_t both = a->bits[w] & b->bits[w];
    if (((both | (both >> 1)) & kLowBits) != kLowBits) return false;
  }
  return true;
}

bool IsUniversal(const Cube* c) {
  for (std::uint32_t w = 0; w < c->words; ++w) {
    if (c->bits[w] != ~0ull) return false;
  }
  return true;
}

Cover* NewCover() {
  auto* f = static_cast<Cover*>(std::malloc(sizeof(Cover)));
  f->cubes = nullptr;
  f->count = 0;
  f->capacity = 0;
  return f;
}

void Push(Cover* f, Cube* c) {
  if (f->count == f->capacity) {
    f->capacity = f->capacity == 0 ? 4 : f->capacity * 2;
    f->cubes = static_cast<Cube**>(std::realloc(f->cubes, f->capacity * sizeof(Cube*)));
  }
  f->cubes[f->count++] = c;
}

void FreeCover(Cover* f) {
  for (std::uint32_t i = 0; i < f->count; ++i) std::free(f->cubes[i]);
  std::free(f->cubes);
  std::free(f);
}

// The cofactor of f with respect to c: the cubes that meet c, with c's literals raised.
// `skip` (an index into f, or f->count) leaves one cube out.
Cover* Cofactor(const Cover* f, const Cube* c, std::uint32_t skip) {
  Cover* r = NewCover();
  for (std::uint32_t i = 0; i < f->count; ++i) {
    if (i == skip || !Intersects(f->cubes[i], c)) continue;
    Cube* g = CopyCube(f->cubes[i]);
    for (std::uint32_t w = 0; w < g->words; ++w) g->bits[w] |= ~c->bits[w];
    Push(r, g);
  }
  return r;
}

struct Budget {
  std::uint64_t nodes_left;
  std::uint64_t nodes_used = 0;
};

// Whether f covers every point. Splits on the variable with the most literals; a cover with
// no literal left in some variable's column can be split on another. Answers "no" when the
// budget runs out, which only makes the minimizer more conservative.
bool Tautology(const Cover* f, Budget& budget) {
  ++budget.nodes_used;
  if (budget.nodes_left == 0) return false;
  --budget.nodes_left;
  if (f->count == 0) return false;
  const std::uint32_t vars = f->cubes[0]->vars;
  std::uint32_t best = vars;
  std::uint32_t best_literals = 0;
  for (std::uint32_t i = 0; i < f->count; ++i) {
    if (IsUniversal(f->cubes[i])) return true;
  }
  for (std::uint32_t v = 0; v < vars; ++v) {
    std::uint32_t literals = 0;
    for (std::uint32_t i = 0; i < f->count; ++i) literals += Field(f->cubes[i], v) != 3u;
    if (literals > best_literals) {
      best_literals = literals;
      best = v;
    }
  }
  for (unsigned value : {1u, 2u}) {
    Cube* half = Universe(vars);
    SetField(half, best, value);
    Cover* g = Cofactor(f, half, f->count);
    std::free(half);
    const bool covered = Tautology(g, budget);
    FreeCover(g);
    if (!covered) return false;
  }
  return true;
}

// Whether cube c is covered by f without f's cube `skip`.
bool Covered(const Cover* f, const Cube* c, std::uint32_t skip, Budget& budget) {
  Cover* g = Cofactor(f, c, skip);
  const bool covered = Tautology(g, budget);
  FreeCover(g);
  return covered;
}

// Raises each literal of each cube that the rest of the function still covers.
void Expand(Cover* f, Budget& budget) {
  for (std::uint32_t i = 0; i < f->count; ++i) {
    for (std::uint32_t v = 0; v < f->cubes[i]->vars; ++v) {
      if (Field(f->cubes[i], v) == 3u) continue;
      Cube* trial = CopyCube(f->cubes[i]);
      SetField(trial, v, 3u);
      if (Covered(f, trial, f->count, budget)) {
        std::free(f->cubes[i]);
        f->cubes[i] = trial;
      } else {
        std::free(trial);
      }
    }
  }
}

// Drops every cube that another single cube contains, and then every cube the others cover.
Cover* Irredundant(Cover* f, Budget& budget) {
  Cover* kept = NewCover();
  for (std::uint32_t i = 0; i < f->count; ++i) {
    bool contained = false;
    // A dropped cube's slot is null: whatever contained it contains cube i as well.
    for (std::uint32_t j = 0; j < f->count && !contained; ++j) {
      contained = j != i && f->cubes[j] != nullptr && Contains(f->cubes[j], f->cubes[i]) &&
                  (j < i || !Contains(f->cubes[i], f->cubes[j]));
    }
    if (contained) {
      std::free(f->cubes[i]);
      f->cubes[i] = nullptr;
    } else {
      Push(kept, f->cubes[i]);
    }
  }
  std::free(f->cubes);
  std::free(f);
  for (std::uint32_t i = kept->count; i-- > 0;) {
    if (Covered(kept, kept->cubes[i], i, budget)) {
      std::free(kept->cubes[i]);
      kept->cubes[i] = kept->cubes[--kept->count];
    }
  }
  return kept;
}

// An on-set with structure to find: a few hidden cubes with few literals, each handed in
// split into all 2^k sub-cubes over k extra variables, plus some random small cubes.
Cover* RandomFunction(workload::Rng& rng) {
  const auto vars = static_cast<std::uint32_t>(rng.Uniform(20, 90));
  Cover* f = NewCover();
  const std::size_t hidden = rng.Uniform(4, 10);
  for (std::size_t h = 0; h < hidden; ++h) {
    Cube* base = Universe(vars);
    const std::size_t literals = rng.Uniform(3, 7);
    for (std::size_t l = 0; l < literals; ++l) SetField(base, static_cast<std::uint32_t>(rng.Next() % vars), 1u + (rng.Next() & 1));
    const auto split = static_cast<unsigned>(rng.Uniform(1, 3));
    std::uint32_t extra[3];
    for (unsigned k = 0; k < split; ++k) extra[k] = static_cast<std::uint32_t>(rng.Next() % vars);
    for (unsigned pattern = 0; pattern < (1u << split); ++pattern) {
      Cube* piece = CopyCube(base);
      for (unsigned k = 0; k < split; ++k) SetField(piece, extra[k], 1u + ((pattern >> k) & 1u));
      Push(f, piece);
    }
    std::free(base);
  }
  const std::size_t noise = rng.Uniform(2, 12);
  for (std::size_t n = 0; n < noise; ++n) {
    Cube* c = Universe(vars);
    const std::size_t literals = rng.Uniform(4, 12);
    for (std::size_t l = 0; l < literals; ++l) SetField(c, static_cast<std::uint32_t>(rng.Next() % vars), 1u + (rng.Next() & 1));
    Push(f, c);
  }
  return f;
}

std::uint64_t LiteralCount(const Cover* f) {
  std::uint64_t literals = 0;
  for (std::uint32_t i = 0; i < f->count; ++i) {
    for (std::uint32_t v = 0; v < f->cubes[i]->vars; ++v) literals += Field(f->cubes[i], v) != 3u;
  }
  return literals;
}

// What minimizing a stream of functions added up to.
struct Totals {
  std::uint64_t nodes = 0;  // tautology checks
  std::uint64_t literals_before = 0;
  std::uint64_t literals_after = 0;
  std::uint64_t checksum = 0;
};

// Two passes of expand and irredundant over one random function.
void MinimizeOne(workload::Rng& rng, Totals& totals) {
  Cover* f = RandomFunction(rng);
  totals.literals_before += LiteralCount(f);
  Budget budget{200000};
  for (int pass = 0; pass < 2; ++pass) {
    Expand(f, budget);
    f = Irredundant(f, budget);
  }
  const std::uint64_t literals = LiteralCount(f);
  totals.literals_after += literals;
  totals.nodes += budget.nodes_used;
  totals.checksum = totals.checksum * 1000003 + f->count * 131 + literals;
  FreeCover(f);
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t functions = workload::Scaled(60, workload::Scale(argc, argv));
  workload::Rng rng(8086);
  Totals totals;
  for (std::size_t i = 0; i < functions; ++i) MinimizeOne(rng, totals);
  std::printf("minimizer: %zu functions, %llu tautology nodes, literals %llu -> %llu, checksum %llu\n",
              functions, static_cast<unsigned long long>(totals.nodes),
              static_cast<unsigned long long>(totals.literals_before),
              static_cast<unsigned long long>(totals.literals_after),
              static_cast<unsigned long long>(totals.checksum));
  return 0;
}
