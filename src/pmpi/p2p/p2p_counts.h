/* p2p_counts.h: includes the entry points' header named by P2P_API twice: with COUNT_T int (MPI_Send
 * ...) and, for MPI 4 libraries, COUNT_T MPI_Count with the _c suffix (MPI_Send_c ...), so both forms
 * share one path and one routing. Include it once, after defining P2P_API. */
#define COUNT_T int
#define SFX(name) name
#include P2P_API
#undef COUNT_T
#undef SFX
#if MPI_VERSION >= 4
#define COUNT_T MPI_Count
#define SFX(name) name##_c
#include P2P_API
#undef COUNT_T
#undef SFX
#endif
#undef P2P_API
