func.func @f(%t: tensor<4xi64>) -> tensor<4xi64> {
  %r1 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%t : tensor<4xi64>) outs(%t : tensor<4xi64>) {
    linalg.yield %in : i64
  } -> tensor<4xi64>
  %r3 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%t : tensor<4xi64>) outs(%t : tensor<4xi64>) {
  ^bb0(%in: i64, %out: i64):
    linalg.yield %in : i64
  ^bb0(%in: i64, %out: i64):
  } -> tensor<4xi64>
  return %r1 : tensor<4xi64>
}
