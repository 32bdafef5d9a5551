// Umbrella header: the whole public API of libmemarena (the CUDA part is <memarena/cuda.h>).
// The C API (<memarena/c_api.h>) is not here: its functions live only in the drop-in
// libraries, so a program linked against libmemarena alone must not see their declarations.
#pragma once

#include "memarena/adaptors.h"
#include "memarena/allocator.h"
#include "memarena/arena.h"
#include "memarena/config.h"
#include "memarena/config_docs.h"
#include "memarena/errors.h"
#include "memarena/export.h"
#include "memarena/host.h"
#include "memarena/memory_source.h"
#include "memarena/planner.h"
#include "memarena/stats.h"
#include "memarena/tracing.h"
#include "memarena/virtual_memory_source.h"
#include "memarena/observability.h"
