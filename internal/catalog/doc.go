// Package catalog decides which tools a node's model sees and may call
// (CONTRACT_SPEC §1.3, §12), and installs third-party builtins (Install).
//
// Two sets are kept apart on purpose:
//
//   - Callable (Visible): every builtin tool of the loaded builtin plugins,
//     plus the business tools in the skill's toolNames. Calling anything
//     else is REJECTED with CATALOG_DENIED (TOOL_OBSERVATION §5).
//   - Offered (Definitions, Prompt): what the model is shown. The
//     availability rules of §12 remove builtin_node_approval while no write
//     is held by the write gate, builtin_node_delegate while there is no
//     delegatable skill or the depth limit is reached, and
//     builtin_output_set while nobody uses the node's outputs.
//
// A builtin that is not offered stays callable, so that a model that calls
// it anyway gets the builtin's own rejection with a precise next step
// (APPROVAL_NOT_GATED, "call the write tool first": TOOL_OBSERVATION §9
// scenario 2) rather than a generic CATALOG_DENIED.
//
// The prompt's tool catalogue lists the offered builtins and the business
// tools configured in contract.tools (label, side effect, arguments with
// their labels); a business tool in toolNames without a contract is
// callable and has a definition, but no catalogue entry.
package catalog
