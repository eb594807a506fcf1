"""A small table of world knowledge for open value linking: continents, countries, languages,
seasons, adjectives of nationality.

General public knowledge (not taken from any database): it tells the open value linker that
"Asia" is a continent, "France" a country and "English" a language, so such a literal goes to a
continent-, country- or language-like column rather than, say, a city column. A proper noun the
table does not know is, by elimination, more likely a city, a person or an organisation.
"""

from __future__ import annotations

__all__ = ["ALIASES", "DEMONYMS", "country_of", "kind_of"]


def _names(text: str) -> frozenset[str]:
    return frozenset(" ".join(name.split()) for name in text.split("|") if name.strip())


CONTINENTS = frozenset(
    {"asia", "africa", "europe", "antarctica", "oceania", "north america", "south america",
     "central america", "latin america", "americas", "australia"}
)

COUNTRIES = _names(
    """afghanistan|albania|algeria|andorra|angola|argentina|armenia|aruba|australia|austria|azerbaijan|
    bahamas|bahrain|bangladesh|barbados|belarus|belgium|belize|benin|bhutan|bolivia|bosnia|botswana|brazil|
    brunei|bulgaria|burkina faso|burundi|cambodia|cameroon|canada|cape verde|chad|chile|china|colombia|
    comoros|congo|costa rica|croatia|cuba|cyprus|czech republic|czechia|denmark|djibouti|dominica|
    dominican republic|ecuador|egypt|el salvador|england|eritrea|estonia|eswatini|ethiopia|fiji|finland|
    france|gabon|gambia|georgia|germany|ghana|greece|greenland|grenada|guatemala|guinea|guyana|haiti|
    honduras|hong kong|hungary|iceland|india|indonesia|iran|iraq|ireland|israel|italy|jamaica|japan|
    jordan|kazakhstan|kenya|kiribati|korea|south korea|north korea|kosovo|kuwait|kyrgyzstan|laos|latvia|
    lebanon|lesotho|liberia|libya|liechtenstein|lithuania|luxembourg|madagascar|malawi|malaysia|maldives|
    mali|malta|mauritania|mauritius|mexico|moldova|monaco|mongolia|montenegro|morocco|mozambique|myanmar|
    namibia|nauru|nepal|netherlands|holland|new zealand|nicaragua|niger|nigeria|norway|oman|pakistan|
    palau|panama|paraguay|peru|philippines|poland|portugal|puerto rico|qatar|romania|russia|rwanda|samoa|
    san marino|saudi arabia|scotland|senegal|serbia|seychelles|sierra leone|singapore|slovakia|slovenia|
    somalia|south africa|spain|sri lanka|sudan|suriname|sweden|switzerland|syria|taiwan|tajikistan|
    tanzania|thailand|togo|tonga|trinidad|tunisia|turkey|turkmenistan|tuvalu|uganda|ukraine|
    united arab emirates|uae|united kingdom|uk|united states|usa|us|america|uruguay|uzbekistan|vanuatu|
    vatican|venezuela|vietnam|wales|yemen|zambia|zimbabwe"""
)

LANGUAGES = _names(
    """english|french|german|spanish|italian|portuguese|dutch|russian|chinese|mandarin|cantonese|
    japanese|korean|arabic|hindi|bengali|urdu|punjabi|persian|farsi|turkish|greek|polish|czech|swedish|
    norwegian|danish|finnish|hungarian|romanian|bulgarian|serbian|croatian|ukrainian|hebrew|thai|
    vietnamese|indonesian|malay|tagalog|swahili|tamil|telugu|latin|irish|welsh|catalan|basque"""
)

#: Seasons: a term, semester or cycle ("the Spring 2010 semester", "the fall election cycle").
SEASONS = frozenset({"spring", "summer", "fall", "autumn", "winter"})

#: Adjectives of nationality and their country ("Bangladeshi artists" -> country 'Bangladesh').
DEMONYMS: dict[str, str] = {
    "afghan": "Afghanistan", "albanian": "Albania", "algerian": "Algeria", "american": "United States",
    "argentine": "Argentina", "argentinian": "Argentina", "australian": "Australia", "austrian": "Austria",
    "bangladeshi": "Bangladesh", "belgian": "Belgium", "bolivian": "Bolivia", "brazilian": "Brazil",
    "british": "United Kingdom", "bulgarian": "Bulgaria", "canadian": "Canada", "chilean": "Chile",
    "chinese": "China", "colombian": "Colombia", "croatian": "Croatia", "cuban": "Cuba", "czech": "Czech Republic",
    "danish": "Denmark", "dutch": "Netherlands", "egyptian": "Egypt", "english": "England", "estonian": "Estonia",
    "ethiopian": "Ethiopia", "filipino": "Philippines", "finnish": "Finland", "french": "France", "german": "Germany",
    "greek": "Greece", "hungarian": "Hungary", "icelandic": "Iceland", "indian": "India", "indonesian": "Indonesia",
    "iranian": "Iran", "iraqi": "Iraq", "irish": "Ireland", "israeli": "Israel", "italian": "Italy",
    "jamaican": "Jamaica", "japanese": "Japan", "kenyan": "Kenya", "korean": "Korea", "latvian": "Latvia",
    "lithuanian": "Lithuania", "malaysian": "Malaysia", "mexican": "Mexico", "moroccan": "Morocco",
    "nepalese": "Nepal", "nigerian": "Nigeria", "norwegian": "Norway", "pakistani": "Pakistan", "peruvian": "Peru",
    "polish": "Poland", "portuguese": "Portugal", "romanian": "Romania", "russian": "Russia", "saudi": "Saudi Arabia",
    "scottish": "Scotland", "serbian": "Serbia", "singaporean": "Singapore", "slovak": "Slovakia",
    "slovenian": "Slovenia", "spanish": "Spain", "swedish": "Sweden", "swiss": "Switzerland", "syrian": "Syria",
    "taiwanese": "Taiwan", "thai": "Thailand", "turkish": "Turkey", "ukrainian": "Ukraine", "uruguayan": "Uruguay",
    "venezuelan": "Venezuela", "vietnamese": "Vietnam", "welsh": "Wales", "zimbabwean": "Zimbabwe",
}  # fmt: skip


def country_of(adjective: str) -> str | None:
    """The country an adjective of nationality names, or None.

    >>> country_of("Bangladeshi"), country_of("french"), country_of("Aberdeen")
    ('Bangladesh', 'France', None)
    """
    return DEMONYMS.get(" ".join(adjective.lower().split()))


#: Common alternative spellings of a few countries, tried as further values after the literal.
ALIASES: dict[str, tuple[str, ...]] = {
    "united states": ("USA", "US", "United States of America"),
    "usa": ("United States", "US"),
    "us": ("USA", "United States"),
    "america": ("USA", "United States"),
    "united kingdom": ("UK", "Great Britain"),
    "uk": ("United Kingdom",),
}


def kind_of(text: str) -> str | None:
    """``"continent"``, ``"country"``, ``"language"``, ``"season"`` or None for a literal (any case).

    >>> kind_of("Asia"), kind_of("france"), kind_of("English"), kind_of("Spring"), kind_of("Aberdeen")
    ('continent', 'country', 'language', 'season', None)
    """
    key = " ".join(text.lower().split())
    if key in CONTINENTS and key != "australia":
        return "continent"
    if key in COUNTRIES:
        return "country"
    if key in LANGUAGES:
        return "language"
    if key in SEASONS:
        return "season"
    if key in DEMONYMS:
        return "demonym"
    return None
