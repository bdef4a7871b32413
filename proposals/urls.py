from django.urls import path

from proposals import api

app_name = "proposals"

urlpatterns = [
    path("memory/proposals", api.ProposalList.as_view(), name="list"),
    path("memory/proposals/<int:proposal_id>", api.ProposalDetail.as_view(), name="detail"),
    path("memory/proposals/<int:proposal_id>/undo", api.ProposalUndo.as_view(), name="undo"),
]
