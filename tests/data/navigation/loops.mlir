func.func @g(%n: index, %m: memref<8x8xf32>, %t: tensor<8xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f32) {
    %x = memref.load %m[%i, %i] : memref<8x8xf32>
    %y = arith.addf %acc, %x : f32
    scf.yield %y : f32
  }
  scf.parallel (%p, %q) = (%c0, %c0) to (%n, %n) step (%c1, %c1) {
    memref.store %z, %m[%p, %q] : memref<8x8xf32>
  }
  affine.parallel (%u, %w) = (0, 0) to (8, 8) {
    %l = affine.load %m[%u, %u] : memref<8x8xf32>
    affine.store %l, %m[%u, %w] : memref<8x8xf32>
  }
  %r = scf.forall (%k) in (8) shared_outs(%o = %t) -> (tensor<8xf32>) {
    %e = tensor.extract %o[%k] : tensor<8xf32>
  }
  %a0,
  %a1
    = scf.for %j = %c0 to %n step %c1 iter_args(%x = %z, %y = %z) -> (f32, f32) {
    scf.yield %x, %y : f32, f32
  }
  return %s : f32
}
