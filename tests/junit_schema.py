"""A small validator for the XSD constructs of tests/fixtures/junit/junit.xsd (no download, no
xmlschema): global and local xs:element (minOccurs / maxOccurs), named and inline
xs:complexType with xs:sequence / xs:choice, xs:complexContent and xs:simpleContent extensions,
xs:attribute (use="required"), and xs:simpleType restrictions (minLength, pattern) of xs:string,
xs:token, xs:int, xs:decimal and xs:dateTime. Anything else in a schema is an error, so the
validator cannot silently accept what it does not understand.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

XS = "{http://www.w3.org/2001/XMLSchema}"
BUILTIN = {
    "xs:string": re.compile(r".*", re.S),
    "xs:token": re.compile(r"\S(.*\S)?|", re.S),
    "xs:int": re.compile(r"[+-]?\d+"),
    "xs:decimal": re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)"),
    "xs:dateTime": re.compile(
        r"-?\d{4,}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?"
    ),
}


class SchemaError(ValueError):
    pass


class Schema:
    def __init__(self, path: str | Path) -> None:
        root = ET.parse(path).getroot()
        self.elements = {e.get("name"): e for e in root.findall(f"{XS}element")}
        self.complex = {t.get("name"): t for t in root.findall(f"{XS}complexType")}
        self.simple = {t.get("name"): t for t in root.findall(f"{XS}simpleType")}

    # ------------------------------------------------------------------ simple values
    def check_value(self, value: str, type_name: str, where: str) -> None:
        if type_name in BUILTIN:
            if not BUILTIN[type_name].fullmatch(value):
                raise SchemaError(f"{where}: {value!r} is not a valid {type_name}")
            return
        if type_name not in self.simple:
            raise SchemaError(f"{where}: unknown simple type {type_name!r}")
        restriction = self.simple[type_name].find(f"{XS}restriction")
        self.check_value(value, restriction.get("base"), where)
        for facet in restriction:
            name, limit = facet.tag.replace(XS, ""), facet.get("value")
            if name == "minLength" and len(value) < int(limit):
                raise SchemaError(f"{where}: {value!r} is shorter than {limit}")
            elif name == "pattern" and not re.fullmatch(limit, value):
                raise SchemaError(f"{where}: {value!r} does not match {limit}")
            elif name not in ("minLength", "pattern", "whiteSpace"):
                raise SchemaError(f"unsupported facet {name}")

    # ------------------------------------------------------------------ complex types
    def parts(self, complex_type: ET.Element) -> tuple[list, ET.Element | None, bool]:
        """(attribute declarations, content model or None, text allowed)."""
        attributes = list(complex_type.findall(f"{XS}attribute"))
        model = None
        text = False
        for child in complex_type:
            tag = child.tag.replace(XS, "")
            if tag in ("sequence", "choice"):
                model = child
            elif tag in ("complexContent", "simpleContent"):
                extension = child.find(f"{XS}extension")
                attributes += extension.findall(f"{XS}attribute")
                base = extension.get("base")
                if tag == "complexContent":
                    base_attributes, model, text = self.parts(self.complex[base])
                    attributes += base_attributes
                else:
                    text = True
            elif tag != "attribute":
                raise SchemaError(f"unsupported construct xs:{tag}")
        return attributes, model, text

    def check_element(self, node: ET.Element, decl: ET.Element, where: str) -> None:
        where = f"{where}/{node.tag}"
        type_name = decl.get("type")
        inline = decl.find(f"{XS}complexType")
        if inline is None and type_name in self.complex:
            inline = self.complex[type_name]
        if inline is None:  # a simple type: text only
            if len(node) or node.attrib:
                raise SchemaError(f"{where}: simple content expected")
            self.check_value(node.text or "", type_name or "xs:string", where)
            return
        attributes, model, text = self.parts(inline)
        declared = {a.get("name"): a for a in attributes}
        for name in node.attrib:
            if name not in declared:
                raise SchemaError(f"{where}: attribute {name!r} is not allowed")
        for name, a in declared.items():
            if name not in node.attrib:
                if a.get("use") == "required":
                    raise SchemaError(f"{where}: required attribute {name!r} is missing")
                continue
            self.check_value(node.attrib[name], a.get("type", "xs:string"), f"{where}@{name}")
        if not text and (node.text or "").strip():
            raise SchemaError(f"{where}: text is not allowed here")
        children = list(node)
        if text and children:
            raise SchemaError(f"{where}: no child elements allowed")
        rest = self.match(children, model, where) if model is not None else children
        if rest:
            raise SchemaError(f"{where}: unexpected element <{rest[0].tag}>")

    def match(self, children: list, model: ET.Element, where: str) -> list:
        """Consume children by the model (greedy, enough for this schema); return the rest."""
        tag = model.tag.replace(XS, "")
        low = int(model.get("minOccurs", "1"))
        if tag == "choice":
            options = {e.get("name"): e for e in model.findall(f"{XS}element")}
            if children and children[0].tag in options:
                self.check_element(children[0], options[children[0].tag], where)
                return children[1:]
            if low:
                raise SchemaError(f"{where}: expected one of {sorted(options)}")
            return children
        for particle in model:
            if particle.tag != f"{XS}element":
                children = self.match(children, particle, where)
                continue
            name = particle.get("name")
            low = int(particle.get("minOccurs", "1"))
            high = particle.get("maxOccurs", "1")
            high = float("inf") if high == "unbounded" else int(high)
            count = 0
            while children and children[0].tag == name and count < high:
                self.check_element(children[0], particle, where)
                children, count = children[1:], count + 1
            if count < low:
                raise SchemaError(f"{where}: expected <{name}> (at least {low})")
        return children

    def validate(self, text: str) -> None:
        root = ET.fromstring(text)
        if root.tag not in self.elements:
            raise SchemaError(f"root <{root.tag}> is not declared")
        self.check_element(root, self.elements[root.tag], "")
