//! Everything that differs between the C dialects device kernels are written
//! in. Kernel bodies and expressions are dialect-free; only this file knows
//! OpenCL C from CUDA C.

/// A C-family language a device kernel can be emitted in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// OpenCL C 1.2.
    OpenCl,
    /// CUDA C++ (nvcc or NVRTC).
    Cuda,
}

impl Dialect {
    /// Both dialects, for tests and tools that emit every one.
    pub const ALL: [Dialect; 2] = [Dialect::OpenCl, Dialect::Cuda];

    /// What precedes the kernel function's return type.
    pub fn kernel_qualifier(self) -> &'static str {
        match self {
            Dialect::OpenCl => "__kernel",
            // C linkage so the host finds the kernel by its plain name.
            Dialect::Cuda => "extern \"C\" __global__",
        }
    }

    /// The address-space qualifier of a buffer argument, with its trailing
    /// space (CUDA pointers need none).
    pub fn global(self) -> &'static str {
        match self {
            Dialect::OpenCl => "__global ",
            Dialect::Cuda => "",
        }
    }

    /// The qualifier of a read-only table at file scope.
    pub fn constant(self) -> &'static str {
        match self {
            Dialect::OpenCl => "__constant",
            Dialect::Cuda => "__constant__",
        }
    }

    /// A 64-bit signed integer type. CUDA's `long` is 32 bits on Windows.
    pub fn long_type(self) -> &'static str {
        match self {
            Dialect::OpenCl => "long",
            Dialect::Cuda => "long long",
        }
    }

    /// The prologue's bounds check, or `None` where launches cover their
    /// region exactly. OpenCL 1.2 NDRanges are exact (work-groups must tile
    /// them, and the launch geometry only picks groups that do); CUDA grids
    /// are whole blocks, rounded up. The check costs more than it seems on
    /// a CPU implementation: PoCL turned the guarded body into masked
    /// gathers and scatters, 8x slower on 2d4 than the unguarded one. In
    /// dialects with [`row_runs`](Self::row_runs) the run's own bounds
    /// cover dimension 2 and the guard checks the others.
    pub fn bounds_guard(self) -> Option<&'static str> {
        match self {
            Dialect::OpenCl => None,
            Dialect::Cuda => Some("if (i3 >= n3 || z >= n0 * n1) return;"),
        }
    }

    /// Whether a thread computes a run of consecutive rows (dimension 2)
    /// rather than one cell: the grid's y threads share the region's rows
    /// in equal runs, so a launch may give each thread several. Neighbours
    /// along dimension 2 are then the thread's own earlier loads (in
    /// registers or L1), and the prologue's index arithmetic is paid once
    /// per run. CUDA only: the runtime chooses the run length per kernel
    /// and device (controllers' `cuda` module).
    pub fn row_runs(self) -> bool {
        matches!(self, Dialect::Cuda)
    }

    /// The qualifiers of the per-cell function a [`row_runs`](Self::row_runs)
    /// kernel calls in its loop (the body, with `return` ending one cell).
    pub fn cell_function_qualifier(self) -> &'static str {
        match self {
            Dialect::OpenCl => "inline",
            Dialect::Cuda => "static __device__ __forceinline__",
        }
    }

    /// The no-alias qualifier of a buffer argument, with its trailing space:
    /// `src` is never written while a kernel runs and `dst` never read, so
    /// loads may go through the read-only cache and be reused across a run.
    pub fn restrict(self) -> &'static str {
        match self {
            Dialect::OpenCl => "",
            Dialect::Cuda => "__restrict__ ",
        }
    }

    /// The qualifier of an array a work group shares (a fused kernel's
    /// tiles), declared at kernel function scope.
    pub fn local_array(self) -> &'static str {
        match self {
            Dialect::OpenCl => "__local",
            Dialect::Cuda => "__shared__",
        }
    }

    /// The address-space qualifier of a pointer into a work group's shared
    /// arrays, with its trailing space (CUDA's generic pointers need none).
    pub fn local_pointer(self) -> &'static str {
        match self {
            Dialect::OpenCl => "__local ",
            Dialect::Cuda => "",
        }
    }

    /// A barrier of the work group that also orders its shared-memory
    /// writes before the reads after it.
    pub fn group_barrier(self) -> &'static str {
        match self {
            Dialect::OpenCl => "barrier(CLK_LOCAL_MEM_FENCE);",
            Dialect::Cuda => "__syncthreads();",
        }
    }

    /// The work group's index along `axis` (0, 1 or 2), as an `int`.
    pub fn group_id(self, axis: usize) -> String {
        match self {
            Dialect::OpenCl => format!("(int)get_group_id({axis})"),
            Dialect::Cuda => format!("(int)blockIdx.{}", ["x", "y", "z"][axis]),
        }
    }

    /// The work-item's index in its (one-dimensional) work group, as an `int`.
    pub fn local_id(self) -> &'static str {
        match self {
            Dialect::OpenCl => "(int)get_local_id(0)",
            Dialect::Cuda => "(int)threadIdx.x",
        }
    }

    /// The global thread index along `axis` (0, 1 or 2) as a 64-bit value.
    pub fn global_id(self, axis: usize) -> String {
        let xyz = ["x", "y", "z"][axis];
        match self {
            Dialect::OpenCl => format!("get_global_id({axis})"),
            // Widened before multiplying: block index times block size
            // overflows 32 bits on large grids.
            Dialect::Cuda => format!(
                "((long long)blockIdx.{xyz} * (long long)blockDim.{xyz} + (long long)threadIdx.{xyz})"
            ),
        }
    }

    /// The lines a source opens with. Contraction into fused multiply-adds
    /// would change results against the CPU, which never fuses: OpenCL turns
    /// it off here, CUDA through [`compiler_options`](Self::compiler_options).
    pub fn preamble(self, fp64: bool) -> String {
        match self {
            Dialect::OpenCl => {
                let fp64 = if fp64 {
                    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
                } else {
                    ""
                };
                format!("{fp64}#pragma OPENCL FP_CONTRACT OFF\n")
            }
            // NVRTC compiles without the C library headers that define these.
            Dialect::Cuda => {
                "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n\
                 #ifndef NAN\n#define NAN __int_as_float(0x7fffffff)\n#endif\n"
                    .to_string()
            }
        }
    }

    /// Compiler options for results bit-identical to the CPU: IEEE division
    /// and square root, no contraction, never fast math. An OpenCL device
    /// may reject its option; the controller then builds without it.
    pub fn compiler_options(self) -> &'static [&'static str] {
        match self {
            Dialect::OpenCl => &["-cl-fp32-correctly-rounded-divide-sqrt"],
            Dialect::Cuda => &["--fmad=false", "--prec-div=true", "--prec-sqrt=true"],
        }
    }
}

impl std::fmt::Display for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Dialect::OpenCl => "OpenCL C",
            Dialect::Cuda => "CUDA C++",
        })
    }
}
