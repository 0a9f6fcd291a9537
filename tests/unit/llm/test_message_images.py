"""A user message's images: OpenAI image parts on the wire, counted as images, not as text."""

from __future__ import annotations

from agentls.engine.prompt.tokens import IMAGE_TOKENS, TokenEstimator
from agentls.llm.messages import Image, Message


def test_images_go_as_image_url_parts_after_the_text() -> None:
    message = Message("user", "what is this?", images=(Image("image/png", "AAAA"),))
    assert message.to_openai() == {"role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}
    assert Message.user("plain").to_openai() == {"role": "user", "content": "plain"}


def test_an_image_counts_as_an_image_not_as_its_base64() -> None:
    estimator = TokenEstimator(use_tiktoken=False)
    text = Message.user("look")
    big = Message("user", "look", images=(Image("image/png", "A" * 400_000),))
    assert estimator.message_tokens(big) == estimator.message_tokens(text) + IMAGE_TOKENS
