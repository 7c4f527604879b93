# rounds.sh: sourced by the benchmark scripts that run a real program under yod against the bare
# MPI (bench/petsc/run_pipecg.sh, bench/fftw/run_fftw3d.sh). The caller sets $home (the installed
# tree) and defines `run VARIANT`, which prints that run's result line.

# The placement state the probe sees now (core, smt or chip): printed before and after the rounds.
bc_probe() {
    "$home/libexec/bobcat/bench/bobcat-probe" --seconds 0.3 | sed -n 's/.*"placement": "\([a-z]*\)".*/\1/p' | head -1
}

# bc_rounds ROUNDS FILE VARIANT...: ROUNDS rounds of every variant, the order rotated each round
# (interleaved, so drift touches all alike); each run appends "VARIANT <its result line>" to FILE.
# Stops the script if a run fails.
bc_rounds() {
    _n=$1 _file=$2
    shift 2
    _i=0
    while [ "$_i" -lt "$_n" ]; do
        for _v in "$@"; do
            _out=$(run "$_v") || exit 1
            echo "$_v $_out" >>"$_file"
        done
        _first=$1
        shift
        set -- "$@" "$_first"
        _i=$((_i + 1))
    done
}

# The median of column COL of FILE's lines for VARIANT.
bc_median() {
    grep "^$1 " "$2" | awk -v c="$3" '{print $c}' | sort -g |
        awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'
}
