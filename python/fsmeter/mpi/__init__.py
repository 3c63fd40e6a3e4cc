"""Many clients on one shared filesystem under MPI (mpi4py on Open MPI), aggregated as IOR and
mdtest do. mpi4py is imported only by a process that runs as an MPI rank or launches mpirun
(fsmeter.mpi.comm.load_mpi), so fsmeter runs without MPI installed."""
