"""REST views of the wiki (SPEC §14, §14.1). Thin: check who may, validate the JSON's
shape, call one operation in wiki.pages / wiki.compile, shape the answer.

    GET     agents/{id}/memory/wiki?q=          table of contents (no bodies), ranked with q
    GET/PUT/DELETE agents/{id}/memory/wiki/pages/{name}   one page — by its key folder/slug,
                                                         or its slug when one folder holds
                                                         it; PUT changes only what is sent
    GET     agents/{id}/memory/wiki/report      lint issues, open questions; regenerates reports
    POST    agents/{id}/memory/wiki/compile     start a compile: 202; 409 while one runs

The owner may reach every agent; an agent token only its own (403 otherwise).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory.api.common import proposal_answer, source_of
from memory.api.pagination import page_parameters, page_schema, paged
from memory.api.serializers import (
    ProposalAnswerSerializer,
    RunAnswerSerializer,
    RunSerializer,
    TextField,
)
from memory.auth import agent_for
from memory.errors import InvalidInput
from memory.query import Query
from wiki import compile as wiki_compile
from wiki import pages, writes
from wiki.lint import ISSUE_KINDS
from wiki.vault import KINDS


class PageInputSerializer(serializers.Serializer):
    """PUT body: every field optional; the ones sent change, the others keep their
    value. Unknown fields (slug, updated, links…) are ignored: the code owns them."""

    title = TextField(required=False, trim_whitespace=False, max_length=300)
    kind = serializers.ChoiceField(choices=KINDS, required=False)
    sources = serializers.ListField(child=TextField(), required=False)
    questions = serializers.ListField(child=TextField(allow_blank=True), required=False)
    status = TextField(required=False, max_length=40)
    body = TextField(required=False, allow_blank=True, trim_whitespace=False)


# --- output shapes (for the OpenAPI schema; the views return the operations' dicts) ---


class LinkSerializer(serializers.Serializer):
    slug = serializers.CharField()
    key = serializers.CharField(help_text="folder/slug; empty for a bare name no page has")
    folder = serializers.CharField()
    title = serializers.CharField()
    exists = serializers.BooleanField()


class TocEntrySerializer(serializers.Serializer):
    slug = serializers.CharField()
    key = serializers.CharField(help_text="the page's identity: folder/slug")
    title = serializers.CharField()
    kind = serializers.CharField()
    status = serializers.CharField()
    updated = serializers.CharField()
    sources = serializers.ListField(child=serializers.CharField())
    questions = serializers.ListField(child=serializers.CharField())
    folder = serializers.CharField()


class PageSerializer(TocEntrySerializer):
    body = serializers.CharField()
    links_out = LinkSerializer(many=True)
    links_in = LinkSerializer(many=True)


class IssueSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=list(ISSUE_KINDS))
    slug = serializers.CharField()
    key = serializers.CharField()
    title = serializers.CharField()
    path = serializers.CharField()
    detail = serializers.CharField()


class QuestionSerializer(serializers.Serializer):
    slug = serializers.CharField()
    key = serializers.CharField()
    title = serializers.CharField()
    question = serializers.CharField()


class ReportSerializer(serializers.Serializer):
    pages = serializers.IntegerField()
    counts = serializers.DictField(child=serializers.IntegerField())
    issues = IssueSerializer(many=True)
    open_questions = QuestionSerializer(many=True)
    reports = serializers.DictField(child=serializers.CharField())


# --- views -----------------------------------------------------------------------------


class WikiTocView(APIView):
    @extend_schema(
        operation_id="agents_memory_wiki_list",
        parameters=[
            OpenApiParameter("q", str, description="rank by the wiki_search rules"),
            *page_parameters(),
        ],
        responses=page_schema(TocEntrySerializer),
    )
    def get(self, request: Request, agent_id: str) -> Response:
        agent = agent_for(request, agent_id)
        q = request.query_params.get("q")
        listed = pages.list_pages(agent, Query.parse(q) if q else None)
        return paged(request, listed, lambda window: [page.toc() for page in window])


class WikiPageView(APIView):
    @extend_schema(responses=PageSerializer)
    def get(self, request: Request, agent_id: str, slug: str) -> Response:
        agent = agent_for(request, agent_id)
        return Response(pages.get_page(agent, slug).as_dict())

    @extend_schema(
        request=PageInputSerializer,
        responses={200: PageSerializer, 201: PageSerializer, 202: ProposalAnswerSerializer},
    )
    def put(self, request: Request, agent_id: str, slug: str) -> Response:
        agent = agent_for(request, agent_id)
        if not isinstance(request.data, dict):
            raise InvalidInput("The body must be a JSON object.")
        serializer = PageInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        page = writes.save_page_or_propose(
            agent, source=source_of(request), slug=slug, partial=True, **serializer.validated_data
        )
        if not isinstance(page, pages.Page):  # a job's write, proposed (SPEC §5)
            return proposal_answer(page)
        return Response(
            page.as_dict(), status=status.HTTP_201_CREATED if page.created else status.HTTP_200_OK
        )

    @extend_schema(responses={204: None})
    def delete(self, request: Request, agent_id: str, slug: str) -> Response:
        agent = agent_for(request, agent_id)
        writes.delete_page(agent, slug, source=source_of(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class WikiReportView(APIView):
    @extend_schema(responses=ReportSerializer)
    def get(self, request: Request, agent_id: str) -> Response:
        agent = agent_for(request, agent_id)
        return Response(pages.report(agent))


class WikiCompileView(APIView):
    @extend_schema(request=None, responses={202: RunAnswerSerializer})
    def post(self, request: Request, agent_id: str) -> Response:
        agent = agent_for(request, agent_id)
        run = wiki_compile.start_compile(agent, trigger="api")
        return Response({"run": RunSerializer(run).data}, status=status.HTTP_202_ACCEPTED)
