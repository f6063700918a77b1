"""python_tool: math with a stateful, sandboxed Python tool; reward on the boxed answer."""
