// Where the drop-in's large zero-initialised globals go (the pagemap's root, the central
// lists, the empty thread cache, the trace buffer): sections of their own, which
// libmemarena_malloc_startup.ld places ahead of .bss. A process touches a few pages of each
// of them, and the small globals every process writes (flags, locks, counters) then share
// one page after them instead of sitting in the gaps between them (docs/host.md, "Start-up
// footprint of the drop-in"). Elsewhere each is one more .bss.* input section.
#pragma once

// `name` names the object's section (.bss.memarena_large.NAME) for the linker script. The
// object must be zero-initialised: a name starting with ".bss." makes the section NOBITS,
// and a non-zero initialiser is a compile error (section type conflict).
#define MEMARENA_LARGE_BSS(name) [[gnu::section(".bss.memarena_large." #name)]]
