/* C11 generic selection for shmem.h (OpenSHMEM 1.5 "generic" interfaces): shmem_put(dest, src,
 * n, pe) picks shmem_<T>_put from the element type of dest, and shmem_put(ctx, dest, src, n, pe)
 * the context form — the context form has one argument more, which selects it. Only the types
 * without duplicates are listed (int32_t is int, size_t is unsigned long, ...), as the standard says.
 * Included by shmem.h; not a header of its own. */
#ifndef BOBCAT_SHMEM_GENERIC_H
#define BOBCAT_SHMEM_GENERIC_H

void shmemi_generic_type_not_supported(void);

#define SHMEMI_G_RMA(X, OP)                                                                        \
    X(float, float, OP) X(double, double, OP) X(long double, longdouble, OP) X(char, char, OP)     \
    X(signed char, schar, OP) X(short, short, OP) X(int, int, OP) X(long, long, OP)                \
    X(long long, longlong, OP) X(unsigned char, uchar, OP) X(unsigned short, ushort, OP)          \
    X(unsigned int, uint, OP) X(unsigned long, ulong, OP) X(unsigned long long, ulonglong, OP)
#define SHMEMI_G_AMO_STD(X, OP)                                                                    \
    X(int, int, OP) X(long, long, OP) X(long long, longlong, OP) X(unsigned int, uint, OP)         \
    X(unsigned long, ulong, OP) X(unsigned long long, ulonglong, OP)
#define SHMEMI_G_AMO_EXT(X, OP) SHMEMI_G_AMO_STD(X, OP) X(float, float, OP) X(double, double, OP)
/* The bitwise AMO table has int32_t and int64_t beside the unsigned types (uint32_t and uint64_t
 * are unsigned int and unsigned long here). */
#define SHMEMI_G_AMO_BIT(X, OP)                                                                    \
    X(unsigned int, uint, OP) X(unsigned long, ulong, OP) X(unsigned long long, ulonglong, OP)     \
    X(int32_t, int32, OP) X(int64_t, int64, OP)
#define SHMEMI_G_SYNC(X, OP)                                                                       \
    X(short, short, OP) X(int, int, OP) X(long, long, OP) X(long long, longlong, OP)               \
    X(unsigned short, ushort, OP) X(unsigned int, uint, OP) X(unsigned long, ulong, OP)            \
    X(unsigned long long, ulonglong, OP)
/* The bitwise reduction table has int8_t..int64_t beside the unsigned types (uint8_t..uint64_t and
 * size_t are among these). */
#define SHMEMI_G_RED_BIT(X, OP)                                                                    \
    X(unsigned char, uchar, OP) X(unsigned short, ushort, OP) X(unsigned int, uint, OP)            \
    X(unsigned long, ulong, OP) X(unsigned long long, ulonglong, OP) X(int8_t, int8, OP)           \
    X(int16_t, int16, OP) X(int32_t, int32, OP) X(int64_t, int64, OP)
#define SHMEMI_G_RED_MINMAX(X, OP)                                                                 \
    X(char, char, OP) X(signed char, schar, OP) X(short, short, OP) X(int, int, OP) X(long, long, OP) \
    X(long long, longlong, OP) X(unsigned char, uchar, OP) X(unsigned short, ushort, OP)          \
    X(unsigned int, uint, OP) X(unsigned long, ulong, OP) X(unsigned long long, ulonglong, OP)     \
    X(float, float, OP) X(double, double, OP) X(long double, longdouble, OP)
#define SHMEMI_G_RED_ARITH(X, OP)                                                                  \
    SHMEMI_G_RED_MINMAX(X, OP) X(double _Complex, complexd, OP) X(float _Complex, complexf, OP)

#define SHMEMI_GA(T, N, OP) T: shmem_##N##_##OP,
#define SHMEMI_GA_CTX(T, N, OP) T: shmem_ctx_##N##_##OP,
/* Select on the element type of `x` (lvalue conversion drops const). */
#define SHMEMI_GEN(TABLE, OP, x) _Generic(*(x), TABLE(SHMEMI_GA, OP) default: shmemi_generic_type_not_supported)
#define SHMEMI_GEN_CTX(TABLE, OP, x) _Generic(*(x), TABLE(SHMEMI_GA_CTX, OP) default: shmemi_generic_type_not_supported)

/* Pick the context form by argument count: SHMEMI_SELn for a routine of n arguments. */
#define SHMEMI_SEL2(_1, _2, _3, NAME, ...) NAME
#define SHMEMI_SEL3(_1, _2, _3, _4, NAME, ...) NAME
#define SHMEMI_SEL4(_1, _2, _3, _4, _5, NAME, ...) NAME
#define SHMEMI_SEL5(_1, _2, _3, _4, _5, _6, NAME, ...) NAME
#define SHMEMI_SEL6(_1, _2, _3, _4, _5, _6, _7, NAME, ...) NAME
#define SHMEMI_SEL7(_1, _2, _3, _4, _5, _6, _7, _8, NAME, ...) NAME

/* One routine: its non-context form takes the element pointer first; the context form after ctx. */
#define SHMEMI_NC(TABLE, OP, x, ...) SHMEMI_GEN(TABLE, OP, x)(x, __VA_ARGS__)
#define SHMEMI_C(TABLE, OP, ctx, x, ...) SHMEMI_GEN_CTX(TABLE, OP, x)(ctx, x, __VA_ARGS__)
/* The fetch-into forms (_nbi) select on their second argument (dest), as the standard does. */
#define SHMEMI_NC2(TABLE, OP, f, x, ...) SHMEMI_GEN(TABLE, OP, x)(f, x, __VA_ARGS__)
#define SHMEMI_C2(TABLE, OP, ctx, f, x, ...) SHMEMI_GEN_CTX(TABLE, OP, x)(ctx, f, x, __VA_ARGS__)

#define shmemi_put_nc(...) SHMEMI_NC(SHMEMI_G_RMA, put, __VA_ARGS__)
#define shmemi_put_c(...) SHMEMI_C(SHMEMI_G_RMA, put, __VA_ARGS__)
#define shmem_put(...) SHMEMI_SEL4(__VA_ARGS__, shmemi_put_c, shmemi_put_nc, 0)(__VA_ARGS__)
#define shmemi_get_nc(...) SHMEMI_NC(SHMEMI_G_RMA, get, __VA_ARGS__)
#define shmemi_get_c(...) SHMEMI_C(SHMEMI_G_RMA, get, __VA_ARGS__)
#define shmem_get(...) SHMEMI_SEL4(__VA_ARGS__, shmemi_get_c, shmemi_get_nc, 0)(__VA_ARGS__)
#define shmemi_put_nbi_nc(...) SHMEMI_NC(SHMEMI_G_RMA, put_nbi, __VA_ARGS__)
#define shmemi_put_nbi_c(...) SHMEMI_C(SHMEMI_G_RMA, put_nbi, __VA_ARGS__)
#define shmem_put_nbi(...) SHMEMI_SEL4(__VA_ARGS__, shmemi_put_nbi_c, shmemi_put_nbi_nc, 0)(__VA_ARGS__)
#define shmemi_get_nbi_nc(...) SHMEMI_NC(SHMEMI_G_RMA, get_nbi, __VA_ARGS__)
#define shmemi_get_nbi_c(...) SHMEMI_C(SHMEMI_G_RMA, get_nbi, __VA_ARGS__)
#define shmem_get_nbi(...) SHMEMI_SEL4(__VA_ARGS__, shmemi_get_nbi_c, shmemi_get_nbi_nc, 0)(__VA_ARGS__)
#define shmemi_iput_nc(...) SHMEMI_NC(SHMEMI_G_RMA, iput, __VA_ARGS__)
#define shmemi_iput_c(...) SHMEMI_C(SHMEMI_G_RMA, iput, __VA_ARGS__)
#define shmem_iput(...) SHMEMI_SEL6(__VA_ARGS__, shmemi_iput_c, shmemi_iput_nc, 0)(__VA_ARGS__)
#define shmemi_iget_nc(...) SHMEMI_NC(SHMEMI_G_RMA, iget, __VA_ARGS__)
#define shmemi_iget_c(...) SHMEMI_C(SHMEMI_G_RMA, iget, __VA_ARGS__)
#define shmem_iget(...) SHMEMI_SEL6(__VA_ARGS__, shmemi_iget_c, shmemi_iget_nc, 0)(__VA_ARGS__)
#define shmemi_p_nc(...) SHMEMI_NC(SHMEMI_G_RMA, p, __VA_ARGS__)
#define shmemi_p_c(...) SHMEMI_C(SHMEMI_G_RMA, p, __VA_ARGS__)
#define shmem_p(...) SHMEMI_SEL3(__VA_ARGS__, shmemi_p_c, shmemi_p_nc, 0)(__VA_ARGS__)
#define shmemi_g_nc(...) SHMEMI_NC(SHMEMI_G_RMA, g, __VA_ARGS__)
#define shmemi_g_c(...) SHMEMI_C(SHMEMI_G_RMA, g, __VA_ARGS__)
#define shmem_g(...) SHMEMI_SEL2(__VA_ARGS__, shmemi_g_c, shmemi_g_nc, 0)(__VA_ARGS__)
#define shmemi_put_signal_nc(...) SHMEMI_NC(SHMEMI_G_RMA, put_signal, __VA_ARGS__)
#define shmemi_put_signal_c(...) SHMEMI_C(SHMEMI_G_RMA, put_signal, __VA_ARGS__)
#define shmem_put_signal(...) SHMEMI_SEL7(__VA_ARGS__, shmemi_put_signal_c, shmemi_put_signal_nc, 0)(__VA_ARGS__)
#define shmemi_put_signal_nbi_nc(...) SHMEMI_NC(SHMEMI_G_RMA, put_signal_nbi, __VA_ARGS__)
#define shmemi_put_signal_nbi_c(...) SHMEMI_C(SHMEMI_G_RMA, put_signal_nbi, __VA_ARGS__)
#define shmem_put_signal_nbi(...) SHMEMI_SEL7(__VA_ARGS__, shmemi_put_signal_nbi_c, shmemi_put_signal_nbi_nc, 0)(__VA_ARGS__)

/* Atomics. */
#define shmemi_afetch_nc(...) SHMEMI_NC(SHMEMI_G_AMO_EXT, atomic_fetch, __VA_ARGS__)
#define shmemi_afetch_c(...) SHMEMI_C(SHMEMI_G_AMO_EXT, atomic_fetch, __VA_ARGS__)
#define shmem_atomic_fetch(...) SHMEMI_SEL2(__VA_ARGS__, shmemi_afetch_c, shmemi_afetch_nc, 0)(__VA_ARGS__)
#define shmemi_aset_nc(...) SHMEMI_NC(SHMEMI_G_AMO_EXT, atomic_set, __VA_ARGS__)
#define shmemi_aset_c(...) SHMEMI_C(SHMEMI_G_AMO_EXT, atomic_set, __VA_ARGS__)
#define shmem_atomic_set(...) SHMEMI_SEL3(__VA_ARGS__, shmemi_aset_c, shmemi_aset_nc, 0)(__VA_ARGS__)
#define shmemi_aswap_nc(...) SHMEMI_NC(SHMEMI_G_AMO_EXT, atomic_swap, __VA_ARGS__)
#define shmemi_aswap_c(...) SHMEMI_C(SHMEMI_G_AMO_EXT, atomic_swap, __VA_ARGS__)
#define shmem_atomic_swap(...) SHMEMI_SEL3(__VA_ARGS__, shmemi_aswap_c, shmemi_aswap_nc, 0)(__VA_ARGS__)
#define shmemi_acswap_nc(...) SHMEMI_NC(SHMEMI_G_AMO_STD, atomic_compare_swap, __VA_ARGS__)
#define shmemi_acswap_c(...) SHMEMI_C(SHMEMI_G_AMO_STD, atomic_compare_swap, __VA_ARGS__)
#define shmem_atomic_compare_swap(...) SHMEMI_SEL4(__VA_ARGS__, shmemi_acswap_c, shmemi_acswap_nc, 0)(__VA_ARGS__)
#define shmemi_afinc_nc(...) SHMEMI_NC(SHMEMI_G_AMO_STD, atomic_fetch_inc, __VA_ARGS__)
#define shmemi_afinc_c(...) SHMEMI_C(SHMEMI_G_AMO_STD, atomic_fetch_inc, __VA_ARGS__)
#define shmem_atomic_fetch_inc(...) SHMEMI_SEL2(__VA_ARGS__, shmemi_afinc_c, shmemi_afinc_nc, 0)(__VA_ARGS__)
#define shmemi_ainc_nc(...) SHMEMI_NC(SHMEMI_G_AMO_STD, atomic_inc, __VA_ARGS__)
#define shmemi_ainc_c(...) SHMEMI_C(SHMEMI_G_AMO_STD, atomic_inc, __VA_ARGS__)
#define shmem_atomic_inc(...) SHMEMI_SEL2(__VA_ARGS__, shmemi_ainc_c, shmemi_ainc_nc, 0)(__VA_ARGS__)
#define shmemi_afadd_nc(...) SHMEMI_NC(SHMEMI_G_AMO_STD, atomic_fetch_add, __VA_ARGS__)
#define shmemi_afadd_c(...) SHMEMI_C(SHMEMI_G_AMO_STD, atomic_fetch_add, __VA_ARGS__)
#define shmem_atomic_fetch_add(...) SHMEMI_SEL3(__VA_ARGS__, shmemi_afadd_c, shmemi_afadd_nc, 0)(__VA_ARGS__)
#define shmemi_aadd_nc(...) SHMEMI_NC(SHMEMI_G_AMO_STD, atomic_add, __VA_ARGS__)
#define shmemi_aadd_c(...) SHMEMI_C(SHMEMI_G_AMO_STD, atomic_add, __VA_ARGS__)
#define shmem_atomic_add(...) SHMEMI_SEL3(__VA_ARGS__, shmemi_aadd_c, shmemi_aadd_nc, 0)(__VA_ARGS__)
#define shmemi_afand_nc(...) SHMEMI_NC(SHMEMI_G_AMO_BIT, atomic_fetch_and, __VA_ARGS__)
#define shmemi_afand_c(...) SHMEMI_C(SHMEMI_G_AMO_BIT, atomic_fetch_and, __VA_ARGS__)
#define shmem_atomic_fetch_and(...) SHMEMI_SEL3(__VA_ARGS__, shmemi_afand_c, shmemi_afand_nc, 0)(__VA_ARGS__)
#define shmemi_afor_nc(...) SHMEMI_NC(SHMEMI_G_AMO_BIT, atomic_fetch_or, __VA_ARGS__)
#define shmemi_afor_c(...) SHMEMI_C(SHMEMI_G_AMO_BIT, atomic_fetch_or, __VA_ARGS__)
#define shmem_atomic_fetch_or(...) SHMEMI_SEL3(__VA_ARGS__, shmemi_afor_c, shmemi_afor_nc, 0)(__VA_ARGS__)
#define shmemi_afxor_nc(...) SHMEMI_NC(SHMEMI_G_AMO_BIT, atomic_fetch_xor, __VA_ARGS__)
#define shmemi_afxor_c(...) SHMEMI_C(SHMEMI_G_AMO_BIT, atomic_fetch_xor, __VA_ARGS__)
#define shmem_atomic_fetch_xor(...) SHMEMI_SEL3(__VA_ARGS__, shmemi_afxor_c, shmemi_afxor_nc, 0)(__VA_ARGS__)
#define shmemi_aand_nc(...) SHMEMI_NC(SHMEMI_G_AMO_BIT, atomic_and, __VA_ARGS__)
#define shmemi_aand_c(...) SHMEMI_C(SHMEMI_G_AMO_BIT, atomic_and, __VA_ARGS__)
#define shmem_atomic_and(...) SHMEMI_SEL3(__VA_ARGS__, shmemi_aand_c, shmemi_aand_nc, 0)(__VA_ARGS__)
#define shmemi_aor_nc(...) SHMEMI_NC(SHMEMI_G_AMO_BIT, atomic_or, __VA_ARGS__)
#define shmemi_aor_c(...) SHMEMI_C(SHMEMI_G_AMO_BIT, atomic_or, __VA_ARGS__)
#define shmem_atomic_or(...) SHMEMI_SEL3(__VA_ARGS__, shmemi_aor_c, shmemi_aor_nc, 0)(__VA_ARGS__)
#define shmemi_axor_nc(...) SHMEMI_NC(SHMEMI_G_AMO_BIT, atomic_xor, __VA_ARGS__)
#define shmemi_axor_c(...) SHMEMI_C(SHMEMI_G_AMO_BIT, atomic_xor, __VA_ARGS__)
#define shmem_atomic_xor(...) SHMEMI_SEL3(__VA_ARGS__, shmemi_axor_c, shmemi_axor_nc, 0)(__VA_ARGS__)
/* Non-blocking fetching atomics: (fetch, dest, ...). */
#define shmemi_afetchnbi_nc(...) SHMEMI_NC2(SHMEMI_G_AMO_EXT, atomic_fetch_nbi, __VA_ARGS__)
#define shmemi_afetchnbi_c(...) SHMEMI_C2(SHMEMI_G_AMO_EXT, atomic_fetch_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_nbi(...) SHMEMI_SEL3(__VA_ARGS__, shmemi_afetchnbi_c, shmemi_afetchnbi_nc, 0)(__VA_ARGS__)
#define shmemi_aswapnbi_nc(...) SHMEMI_NC2(SHMEMI_G_AMO_EXT, atomic_swap_nbi, __VA_ARGS__)
#define shmemi_aswapnbi_c(...) SHMEMI_C2(SHMEMI_G_AMO_EXT, atomic_swap_nbi, __VA_ARGS__)
#define shmem_atomic_swap_nbi(...) SHMEMI_SEL4(__VA_ARGS__, shmemi_aswapnbi_c, shmemi_aswapnbi_nc, 0)(__VA_ARGS__)
#define shmemi_acswapnbi_nc(...) SHMEMI_NC2(SHMEMI_G_AMO_STD, atomic_compare_swap_nbi, __VA_ARGS__)
#define shmemi_acswapnbi_c(...) SHMEMI_C2(SHMEMI_G_AMO_STD, atomic_compare_swap_nbi, __VA_ARGS__)
#define shmem_atomic_compare_swap_nbi(...) SHMEMI_SEL5(__VA_ARGS__, shmemi_acswapnbi_c, shmemi_acswapnbi_nc, 0)(__VA_ARGS__)
#define shmemi_afincnbi_nc(...) SHMEMI_NC2(SHMEMI_G_AMO_STD, atomic_fetch_inc_nbi, __VA_ARGS__)
#define shmemi_afincnbi_c(...) SHMEMI_C2(SHMEMI_G_AMO_STD, atomic_fetch_inc_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_inc_nbi(...) SHMEMI_SEL3(__VA_ARGS__, shmemi_afincnbi_c, shmemi_afincnbi_nc, 0)(__VA_ARGS__)
#define shmemi_afaddnbi_nc(...) SHMEMI_NC2(SHMEMI_G_AMO_STD, atomic_fetch_add_nbi, __VA_ARGS__)
#define shmemi_afaddnbi_c(...) SHMEMI_C2(SHMEMI_G_AMO_STD, atomic_fetch_add_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi(...) SHMEMI_SEL4(__VA_ARGS__, shmemi_afaddnbi_c, shmemi_afaddnbi_nc, 0)(__VA_ARGS__)
#define shmemi_afandnbi_nc(...) SHMEMI_NC2(SHMEMI_G_AMO_BIT, atomic_fetch_and_nbi, __VA_ARGS__)
#define shmemi_afandnbi_c(...) SHMEMI_C2(SHMEMI_G_AMO_BIT, atomic_fetch_and_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi(...) SHMEMI_SEL4(__VA_ARGS__, shmemi_afandnbi_c, shmemi_afandnbi_nc, 0)(__VA_ARGS__)
#define shmemi_afornbi_nc(...) SHMEMI_NC2(SHMEMI_G_AMO_BIT, atomic_fetch_or_nbi, __VA_ARGS__)
#define shmemi_afornbi_c(...) SHMEMI_C2(SHMEMI_G_AMO_BIT, atomic_fetch_or_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi(...) SHMEMI_SEL4(__VA_ARGS__, shmemi_afornbi_c, shmemi_afornbi_nc, 0)(__VA_ARGS__)
#define shmemi_afxornbi_nc(...) SHMEMI_NC2(SHMEMI_G_AMO_BIT, atomic_fetch_xor_nbi, __VA_ARGS__)
#define shmemi_afxornbi_c(...) SHMEMI_C2(SHMEMI_G_AMO_BIT, atomic_fetch_xor_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi(...) SHMEMI_SEL4(__VA_ARGS__, shmemi_afxornbi_c, shmemi_afxornbi_nc, 0)(__VA_ARGS__)

/* Point-to-point synchronisation (no context forms). */
#define shmem_wait_until(x, ...) SHMEMI_GEN(SHMEMI_G_SYNC, wait_until, x)(x, __VA_ARGS__)
#define shmem_wait_until_all(x, ...) SHMEMI_GEN(SHMEMI_G_SYNC, wait_until_all, x)(x, __VA_ARGS__)
#define shmem_wait_until_any(x, ...) SHMEMI_GEN(SHMEMI_G_SYNC, wait_until_any, x)(x, __VA_ARGS__)
#define shmem_wait_until_some(x, ...) SHMEMI_GEN(SHMEMI_G_SYNC, wait_until_some, x)(x, __VA_ARGS__)
#define shmem_wait_until_all_vector(x, ...) SHMEMI_GEN(SHMEMI_G_SYNC, wait_until_all_vector, x)(x, __VA_ARGS__)
#define shmem_wait_until_any_vector(x, ...) SHMEMI_GEN(SHMEMI_G_SYNC, wait_until_any_vector, x)(x, __VA_ARGS__)
#define shmem_wait_until_some_vector(x, ...) SHMEMI_GEN(SHMEMI_G_SYNC, wait_until_some_vector, x)(x, __VA_ARGS__)
#define shmem_test(x, ...) SHMEMI_GEN(SHMEMI_G_SYNC, test, x)(x, __VA_ARGS__)
#define shmem_test_all(x, ...) SHMEMI_GEN(SHMEMI_G_SYNC, test_all, x)(x, __VA_ARGS__)
#define shmem_test_any(x, ...) SHMEMI_GEN(SHMEMI_G_SYNC, test_any, x)(x, __VA_ARGS__)
#define shmem_test_some(x, ...) SHMEMI_GEN(SHMEMI_G_SYNC, test_some, x)(x, __VA_ARGS__)
#define shmem_test_all_vector(x, ...) SHMEMI_GEN(SHMEMI_G_SYNC, test_all_vector, x)(x, __VA_ARGS__)
#define shmem_test_any_vector(x, ...) SHMEMI_GEN(SHMEMI_G_SYNC, test_any_vector, x)(x, __VA_ARGS__)
#define shmem_test_some_vector(x, ...) SHMEMI_GEN(SHMEMI_G_SYNC, test_some_vector, x)(x, __VA_ARGS__)

/* shmem_sync(team) is the 1.5 team sync; shmem_sync(PE_start, logPE_stride, PE_size, pSync) the
 * deprecated active-set form: told apart by the number of arguments. */
#define SHMEMI_SYNC_SEL(_1, _2, _3, _4, NAME, ...) NAME
#define shmem_sync(...)                                                                            \
    SHMEMI_SYNC_SEL(__VA_ARGS__, shmem_sync_deprecated, shmemi_sync_takes_a_team_or_4_arguments, shmemi_sync_takes_a_team_or_4_arguments, shmem_team_sync, 0) \
    (__VA_ARGS__)

/* Collectives on teams: (team, dest, ...). */
#define SHMEMI_TEAMG(TABLE, OP, team, d, ...) SHMEMI_GEN(TABLE, OP, d)(team, d, __VA_ARGS__)
#define shmem_broadcast(...) SHMEMI_TEAMG(SHMEMI_G_RMA, broadcast, __VA_ARGS__)
#define shmem_collect(...) SHMEMI_TEAMG(SHMEMI_G_RMA, collect, __VA_ARGS__)
#define shmem_fcollect(...) SHMEMI_TEAMG(SHMEMI_G_RMA, fcollect, __VA_ARGS__)
#define shmem_alltoall(...) SHMEMI_TEAMG(SHMEMI_G_RMA, alltoall, __VA_ARGS__)
#define shmem_alltoalls(...) SHMEMI_TEAMG(SHMEMI_G_RMA, alltoalls, __VA_ARGS__)
#define shmem_and_reduce(...) SHMEMI_TEAMG(SHMEMI_G_RED_BIT, and_reduce, __VA_ARGS__)
#define shmem_or_reduce(...) SHMEMI_TEAMG(SHMEMI_G_RED_BIT, or_reduce, __VA_ARGS__)
#define shmem_xor_reduce(...) SHMEMI_TEAMG(SHMEMI_G_RED_BIT, xor_reduce, __VA_ARGS__)
#define shmem_max_reduce(...) SHMEMI_TEAMG(SHMEMI_G_RED_MINMAX, max_reduce, __VA_ARGS__)
#define shmem_min_reduce(...) SHMEMI_TEAMG(SHMEMI_G_RED_MINMAX, min_reduce, __VA_ARGS__)
#define shmem_sum_reduce(...) SHMEMI_TEAMG(SHMEMI_G_RED_ARITH, sum_reduce, __VA_ARGS__)
#define shmem_prod_reduce(...) SHMEMI_TEAMG(SHMEMI_G_RED_ARITH, prod_reduce, __VA_ARGS__)

#endif
