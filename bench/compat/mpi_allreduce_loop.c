/* The peer of the cluster suite's all_reduce figure: a plain C loop timing MPI_Allreduce of
 * float32 sums, nccl-tests style (barrier, `reps` calls back to back, time / reps, averaged over
 * ranks), printing the bus bandwidth 2(n-1)/n * bytes / time. Built and run by
 * bench/compat/cluster_allreduce.sh: mpirun -np 4 mpi_allreduce_loop BYTES WARMUP REPS */
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const long bytes = argc > 1 ? atol(argv[1]) : 64L << 20;
  const int warmup = argc > 2 ? atoi(argv[2]) : 2, reps = argc > 3 ? atoi(argv[3]) : 20;
  const int count = (int)(bytes / 4);
  float* in = malloc(sizeof(float) * count);
  float* out = malloc(sizeof(float) * count);
  for (int i = 0; i < count; ++i) in[i] = (float)(rank + 1 + i % 13);
  for (int i = 0; i < warmup; ++i) {
    MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < reps; ++i) {
    MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
  double t = (MPI_Wtime() - t0) / reps, sum = 0;
  MPI_Allreduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    const double avg = sum / n, algbw = (double)count * 4 / avg / 1e9;
    printf("plain MPI_Allreduce %ld B: %.1f us, algbw %.3f GB/s, busbw %.3f GB/s\n",
           (long)count * 4, avg * 1e6, algbw, algbw * 2.0 * (n - 1) / n);
  }
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
