;; Exports the direct ABI but claims ABI version 99.
(module
  (memory (export "memory") 1)
  (func (export "warden_abi_version") (result i32) i32.const 99)
  (func (export "warden_manifest") (result i64) i64.const 0)
  (func (export "warden_input") (param i32) (result i32) i32.const 1024)
  (func (export "warden_handle") (param i32)))
