module @m attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @kernel1(%x: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func @main(%x: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@kernel1 blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    return
  }
}
