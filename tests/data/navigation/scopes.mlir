// CHECK-LABEL: func.func @mlp
// uses %init and ^bb2
func.func @mlp(%n: index, %init: f32, %cond: i1) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %acc = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (f32) {
    %v = arith.addf %acc, %acc : f32
    scf.yield %v : f32
  }
  scf.if %cond {
    %t = arith.constant 1.0 : f32
  }
  %t = arith.addf %acc, %init : f32
  cf.br ^bb2(%t : f32)
^bb1(%x: f32):  // pred: ^bb2
  return %x : f32
^bb2(%y: f32):  // pred: ^bb0
  cf.br ^bb1(%y : f32)
}
