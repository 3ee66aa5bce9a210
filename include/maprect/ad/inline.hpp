#pragma once
/// \file MAPRECT_ALWAYS_INLINE: for the few tiny functions on every node's path (making, recording, rewinding)
/// whose inlining must not depend on how large the caller has grown.

/// Declares an inline function that the compiler inlines wherever it is called.
#if defined(__GNUC__)
#define MAPRECT_ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define MAPRECT_ALWAYS_INLINE inline
#endif
