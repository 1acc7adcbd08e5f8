;; An extism guard whose handler recurses without end and without touching
;; its linear memory. Its manifest is copied into an extism block byte by
;; byte, as the PDKs do.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"name\":\"extismrecursion\",\"version\":\"1.0.0\",\"abi\":1,\"role\":\"guard\",\"phases\":[\"before\"]}")
  (func (export "warden_manifest") (result i32)
    (local $off i64) (local $i i32)
    (local.set $off (call $alloc (i64.const 87)))
    (loop $copy
      (call $store_u8 (i64.add (local.get $off) (i64.extend_i32_u (local.get $i)))
                      (i32.load8_u offset=16 (local.get $i)))
      (br_if $copy (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (i32.const 87))))
    (call $output_set (local.get $off) (i64.const 87))
    (i32.const 0))
  (func (export "warden_handle") (result i32)
    (drop (call $down (i32.const 0)))
    (i32.const 0))
  (func $down (param i32) (result i32)
    (call $down (i32.add (local.get 0) (i32.const 1)))))
