;; A valid guard whose handler recurses without end and without touching
;; its linear memory: every frame lives on the engine's own stack, on the
;; host's heap.
(module
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"name\":\"recursion\",\"version\":\"1.0.0\",\"abi\":1,\"role\":\"guard\",\"phases\":[\"before\"]}")
  (func (export "warden_abi_version") (result i32) i32.const 1)
  (func (export "warden_manifest") (result i64)
    (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const 81)))
  (func (export "warden_input") (param i32) (result i32) i32.const 4096)
  (func (export "warden_handle") (param i32)
    (drop (call $down (local.get 0))))
  (func $down (param i32) (result i32)
    (call $down (i32.add (local.get 0) (i32.const 1)))))
