"""The conformance suite every LLM backend passes: subclass and define ``make_backend``.

The backend under test must answer the request ``CONFORMANCE_REQUEST`` (and its n=1
variant) with some completions; the suite checks the protocol's promises, not the text.
"""

from __future__ import annotations

from pimento.llm import Backend, ChatRequest, ChatResponse, Message, Usage

CONFORMANCE_REQUEST = ChatRequest(
    (Message("system", "Answer with JSON."), Message("user", "How many patients?")),
    n=3,
    temperature=0.7,
    max_tokens=64,
    json_schema={"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]},
)


class BackendConformance:
    def make_backend(self) -> Backend:
        raise NotImplementedError

    def test_is_a_backend_with_a_name(self):
        backend = self.make_backend()
        assert isinstance(backend, Backend)
        assert isinstance(backend.name, str) and backend.name

    def test_returns_exactly_n_completions(self):
        backend = self.make_backend()
        for n in (1, 3):
            request = ChatRequest(CONFORMANCE_REQUEST.messages, n=n, temperature=0.7, max_tokens=64,
                                  json_schema=CONFORMANCE_REQUEST.json_schema)
            response = backend.complete(request)
            assert isinstance(response, ChatResponse)
            assert len(response.completions) == n
            assert all(isinstance(c.text, str) for c in response.completions)

    def test_reports_usage_that_accumulates(self):
        backend = self.make_backend()
        usage = Usage()
        response = backend.complete(CONFORMANCE_REQUEST)
        usage.add(response)
        usage.add(response)
        assert response.calls >= 1 and response.prompt_tokens >= 0 and response.completion_tokens >= 0
        assert usage.requests == 2 and usage.calls == 2 * response.calls
        assert usage.total_tokens == 2 * (response.prompt_tokens + response.completion_tokens)
