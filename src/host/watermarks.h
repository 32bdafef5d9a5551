// Host watermarks: which levels of the ceiling have fired, and the check the heap's slow
// paths call (outside every heap lock) to fire and re-arm them.
#pragma once

namespace memarena::host::watermarks {

// Compares held bytes with the armed levels; fires the callback for each level crossed
// upward (in order) and re-arms levels held fell below by the hysteresis. One relaxed load
// when no watermarks are set. Call only where no heap lock is held.
void Check() noexcept;

// The highest level currently fired (0 when none): the Prometheus gauge.
double CurrentLevel() noexcept;

}  // namespace memarena::host::watermarks
