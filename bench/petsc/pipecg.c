/* pipecg.c: a real code path that uses nonblocking collectives: PETSc's pipelined conjugate
 * gradient (KSPPIPECG, whose dot products are one MPI_Iallreduce overlapped with the matrix-vector
 * product) on the 5-point Laplacian of an N x N grid, rows split across ranks, with a Jacobi
 * preconditioner. Prints the iteration count, the final residual norm and the solve's time; a
 * fixed right-hand side (A times a known vector) makes every run's numbers comparable.
 *   pipecg [-n N] [-ksp_type pipecg|cg] [PETSc options]                     (bench/petsc/run_pipecg.sh) */
#include <petscksp.h>

int main(int argc, char **argv)
{
    PetscInt n = 400, lo, hi;
    PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
    PetscCall(PetscOptionsGetInt(NULL, NULL, "-n", &n, NULL));
    Mat A;
    PetscCall(MatCreateAIJ(PETSC_COMM_WORLD, PETSC_DECIDE, PETSC_DECIDE, n * n, n * n, 5, NULL, 2, NULL, &A));
    PetscCall(MatGetOwnershipRange(A, &lo, &hi));
    for (PetscInt r = lo; r < hi; r++) {
        PetscInt i = r / n, j = r % n;
        if (i > 0) PetscCall(MatSetValue(A, r, r - n, -1.0, INSERT_VALUES));
        if (i < n - 1) PetscCall(MatSetValue(A, r, r + n, -1.0, INSERT_VALUES));
        if (j > 0) PetscCall(MatSetValue(A, r, r - 1, -1.0, INSERT_VALUES));
        if (j < n - 1) PetscCall(MatSetValue(A, r, r + 1, -1.0, INSERT_VALUES));
        PetscCall(MatSetValue(A, r, r, 4.0, INSERT_VALUES));
    }
    PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
    Vec x, b, u;
    PetscCall(MatCreateVecs(A, &x, &b));
    PetscCall(VecDuplicate(x, &u));
    PetscCall(VecSet(u, 1.0));
    PetscCall(MatMult(A, u, b));
    KSP ksp;
    PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
    PetscCall(KSPSetOperators(ksp, A, A));
    PetscCall(KSPSetType(ksp, KSPPIPECG));
    PC pc;
    PetscCall(KSPGetPC(ksp, &pc));
    PetscCall(PCSetType(pc, PCJACOBI));
    PetscCall(KSPSetTolerances(ksp, 1e-8, PETSC_DEFAULT, PETSC_DEFAULT, 10000));
    PetscCall(KSPSetFromOptions(ksp));
    PetscCall(KSPSetUp(ksp));
    double t0 = MPI_Wtime();
    PetscCall(KSPSolve(ksp, b, x));
    double t = MPI_Wtime() - t0;
    PetscInt its;
    PetscReal rnorm;
    PetscCall(KSPGetIterationNumber(ksp, &its));
    PetscCall(KSPGetResidualNorm(ksp, &rnorm));
    PetscCall(VecAXPY(x, -1.0, u));
    PetscReal err;
    PetscCall(VecNorm(x, NORM_INFINITY, &err));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "pipecg: n %d iterations %d residual %.10e error %.3e solve_s %.6f\n", (int)n,
                          (int)its, (double)rnorm, (double)err, t));
    PetscCall(KSPDestroy(&ksp));
    PetscCall(VecDestroy(&x));
    PetscCall(VecDestroy(&b));
    PetscCall(VecDestroy(&u));
    PetscCall(MatDestroy(&A));
    PetscCall(PetscFinalize());
    return 0;
}
